#!/usr/bin/env python3
"""Writes charts/gpu-extender/README.md: the chart's values table (helm-docs' convention), one row per value
of values.schema.json that holds a value (a leaf: not an object of named properties), with its type from the
schema, its default from values.yaml and its description from the comment above it in values.yaml (or, with
none, the nearest enclosing one). tests/docs/check_docs.py checks the table against both files.

Usage: scripts/chart-readme.py [--check]   (--check: exit 1 if the README is not what this writes)"""
import json
import os
import re
import sys

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
CHART = os.path.join(ROOT, "charts", "gpu-extender")


def schema_leaves(node, path=()):
    """(path, schema) of every value the schema holds: recursion stops where an object names no properties."""
    if node.get("type") == "object" and "properties" in node:
        for key, child in node["properties"].items():
            yield from schema_leaves(child, path + (key,))
    else:
        yield path, node


def schema_type(node):
    if "type" in node:
        return node["type"] if isinstance(node["type"], str) else " or ".join(node["type"])
    if "anyOf" in node or "oneOf" in node:
        return " or ".join(sorted({schema_type(n) for n in node.get("anyOf", node.get("oneOf"))}))
    if "enum" in node:
        return "enum"
    return "any"


def comments(values_text):
    """Per dotted key path of values.yaml, the comment lines just above the key (joined)."""
    out, stack, pending = {}, [], []
    for line in values_text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            pending.append(stripped.lstrip("#").strip())
            continue
        match = re.match(r"^(\s*)([A-Za-z0-9_.-]+):", line)
        if not match or line.lstrip().startswith("-"):
            pending = [] if not stripped else pending
            continue
        indent = len(match.group(1))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, match.group(2)))
        path = ".".join(k for _, k in stack)
        if pending:
            out[path] = " ".join(p for p in pending if p)
        pending = []
    return out


def value_at(values, path):
    for key in path:
        values = values[key]
    return values


def rows():
    with open(os.path.join(CHART, "values.schema.json")) as f:
        schema = json.load(f)
    with open(os.path.join(CHART, "values.yaml")) as f:
        text = f.read()
    values = yaml.safe_load(text)
    described = comments(text)
    for path, node in schema_leaves(schema):
        dotted = ".".join(path)
        description = node.get("description") or described.get(dotted)
        for k in range(len(path) - 1, 0, -1):
            if description:
                break
            description = described.get(".".join(path[:k]))
        default = json.dumps(value_at(values, path), separators=(",", ":"))
        yield dotted, schema_type(node), default, (description or "").replace("|", "\\|")


def render():
    lines = ["# The gpu-extender chart", "",
             "Installs the extender and a second scheduler, `gpu-scheduler`, that calls it "
             "(the repository's `docs/deploying.md` has the procedure). Every value below is checked by "
             "`values.schema.json`: a misspelt or mistyped value fails `helm install` naming it.", "",
             "Written by `scripts/chart-readme.py` from `values.yaml` and `values.schema.json`; "
             "`tests/docs/check_docs.py` checks it against both.", "",
             "| value | type | default | description |", "|---|---|---|---|"]
    for dotted, kind, default, description in rows():
        lines.append(f"| `{dotted}` | {kind} | `{default}` | {description} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    target = os.path.join(CHART, "README.md")
    text = render()
    if "--check" in sys.argv:
        with open(target) as f:
            sys.exit(0 if f.read() == text else 1)
    with open(target, "w") as f:
        f.write(text)
