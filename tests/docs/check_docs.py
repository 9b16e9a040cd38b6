#!/usr/bin/env python3
"""Checks that keep the guide true (ctest runs each): check_docs.py links | paths | lengths | flags GPU_EXTENDER | chart.

links  every relative link and #anchor in README.md, docs/ and the chart's README resolves (GitHub's anchors:
       a heading lower-cased, punctuation dropped, spaces as hyphens)
paths  every file path the comments, docs and tests name (src/..., tests/..., a layer's "kube/reflector.h") exists
lengths every source, test and bench file (C++, Python, shell) has at most 400 lines: small files, one purpose each
flags  docs/flags.md's text block is what `gpu-extender --help` prints
chart  charts/gpu-extender/README.md has one row per value of values.schema.json and values.yaml, both ways,
       with the schema's type, the default values.yaml holds and a description
Prints what is wrong and exits 1."""
import importlib
import json
import os
import pathlib
import re
import subprocess
import sys

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))


def pages():
    yield os.path.join(ROOT, "README.md")
    yield os.path.join(ROOT, "charts", "gpu-extender", "README.md")
    for name in sorted(os.listdir(os.path.join(ROOT, "docs"))):
        if name.endswith(".md"):
            yield os.path.join(ROOT, "docs", name)


def outside_code(text):
    """The text with fenced code blocks and inline code blanked out (links there are not links)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(path):
    with open(path) as f:
        text = re.sub(r"^```.*?^```", "", f.read(), flags=re.M | re.S)
    out = set()
    for heading in re.findall(r"^#+ (.+)$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        out.add(slug)
    return out


def check_links():
    errors = []
    for page in pages():
        with open(page) as f:
            text = outside_code(f.read())
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target):
                continue  # http:, https:, mailto:
            file_part, _, anchor = target.partition("#")
            resolved = os.path.normpath(os.path.join(os.path.dirname(page), file_part)) if file_part else page
            where = f"{os.path.relpath(page, ROOT)}: link {target}"
            if not os.path.exists(resolved):
                errors.append(f"{where}: no {os.path.relpath(resolved, ROOT)}")
            elif anchor and (not resolved.endswith(".md") or anchor not in anchors(resolved)):
                errors.append(f"{where}: no heading #{anchor} there")
    return errors


def check_flags(binary):
    help_text = subprocess.run([binary, "--help"], capture_output=True, text=True, check=True).stdout
    with open(os.path.join(ROOT, "docs", "flags.md")) as f:
        blocks = re.findall(r"^```text\n(.*?)^```", f.read(), re.M | re.S)
    if len(blocks) != 1:
        return [f"docs/flags.md: {len(blocks)} text blocks, expected the one of --help"]
    if blocks[0] != help_text:
        return ["docs/flags.md: its block is not `gpu-extender --help` (paste `build/gpu-extender --help` into it anew)"]
    return []


def check_chart():
    chart = os.path.join(ROOT, "charts", "gpu-extender")
    with open(os.path.join(chart, "values.schema.json")) as f:
        schema = json.load(f)
    with open(os.path.join(chart, "values.yaml")) as f:
        values = yaml.safe_load(f)
    with open(os.path.join(chart, "README.md")) as f:
        rows = re.findall(r"^\| `([^`]+)` \| ([^|]+) \| `(.*)` \| (.*) \|$", f.read(), re.M)
    table = {path: (kind.strip(), default, description.strip()) for path, kind, default, description in rows}
    errors = []
    if len(table) != len(rows):
        errors.append("charts/gpu-extender/README.md: a value listed twice")

    writer = importlib.import_module("chart-readme")  # the table's own reading of the schema and its types
    schema_leaves = {".".join(path): node for path, node in writer.schema_leaves(schema)}

    def values_leaves(node, path=()):
        dotted = ".".join(path)
        if path and dotted in schema_leaves:
            yield dotted, node
        elif isinstance(node, dict):
            for key, child in node.items():
                yield from values_leaves(child, path + (key,))
        else:
            yield dotted, node

    in_values = dict(values_leaves(values))
    for path in sorted(set(schema_leaves) - set(table)):
        errors.append(f"chart README: value {path} of values.schema.json is not listed")
    for path in sorted(set(in_values) - set(table)):
        errors.append(f"chart README: value {path} of values.yaml is not listed")
    for path in sorted(set(table) - set(schema_leaves)):
        errors.append(f"chart README: {path} is listed but values.schema.json has no such value")
    for path in sorted(set(table) - set(in_values)):
        errors.append(f"chart README: {path} is listed but values.yaml has no such value")
    for path, (kind, default, description) in table.items():
        if path in schema_leaves and kind != writer.schema_type(schema_leaves[path]):
            errors.append(f"chart README: {path} is listed as {kind}, the schema says {writer.schema_type(schema_leaves[path])}")
        if path in in_values and default != json.dumps(in_values[path], separators=(",", ":")):
            errors.append(f"chart README: {path} defaults to {default} in the table, values.yaml has {in_values[path]!r}")
        if not description:
            errors.append(f"chart README: {path} has no description")
    return errors



# Paths named in the project's text that are made, not kept: generated files and benchmark output.
MADE_PATHS = {"cmake/build_info.cpp", "bench/results/results.json"}
TOP = r"(?:src|include|tests|bench|docs|charts|manifests|scripts|extender-config|cmake)"
LAYER = r"(?:common|wire|policy|usage|state|kube|server|tools|app)"
NAMED_PATH = re.compile(r"(?<![\w./-])((?:" + TOP + "|" + LAYER + r")/[\w./-]*[\w-]\.(?:h|cpp|py|md|sh|yaml|json|txt))\b")


def tracked(*paths):
    """The files git tracks under `paths`, relative to the root."""
    return subprocess.run(["git", "ls-files", *paths], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.split()


def check_paths():
    """Every file path a comment, a doc or a test names (src/..., tests/..., or a layer's "kube/reflector.h")
    exists: from the root, from src/, include/gpu_extender/ or tests/unit/ (the include folders), or
    beside the file. A path with an upper-case placeholder (examples/NAME.yaml) is a pattern."""
    listed = tracked("src", "include", "tests", "bench", "docs", "charts", "cmake", "scripts", "README.md",
                     "CMakeLists.txt", "Makefile", "Dockerfile", ".ci")
    root = pathlib.Path(ROOT)
    errors = []
    for name in listed:
        path = root / name
        if "fixtures" in path.parts or path.suffix in (".png", ".json") or not path.is_file():
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for match in NAMED_PATH.finditer(line):
                named = match.group(1)
                if named in MADE_PATHS or re.search(r"/[A-Z]+\.", named):
                    continue
                places = [root / named, root / "src" / named, root / "include/gpu_extender" / named, root / "tests/unit" / named,
                          path.parent / named]
                if not any(p.exists() for p in places):
                    errors.append(f"{name}:{number}: names {named}, which is not in the repository")
    return errors

MAX_LINES = 400


def check_lengths():
    """Every tracked source, test and bench file of code (C++, Python, shell) has at most MAX_LINES lines."""
    listed = tracked("src", "include", "tests", "bench", "scripts", ".ci")
    errors = []
    for name in listed:
        path = pathlib.Path(ROOT) / name
        if "fixtures" in path.parts or path.suffix not in (".cpp", ".h", ".py", ".sh") or not path.is_file():
            continue
        lines = len(path.read_text(errors="replace").splitlines())
        if lines > MAX_LINES:
            errors.append(f"{name}: {lines} lines, more than {MAX_LINES}: split it by purpose")
    return errors


def main():
    check = sys.argv[1] if len(sys.argv) > 1 else ""
    if check == "links":
        errors = check_links()
    elif check == "paths":
        errors = check_paths()
    elif check == "lengths":
        errors = check_lengths()
    elif check == "flags" and len(sys.argv) == 3:
        errors = check_flags(sys.argv[2])
    elif check == "chart":
        errors = check_chart()
    else:
        print(__doc__, file=sys.stderr)
        return 2
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
