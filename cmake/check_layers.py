#!/usr/bin/env python3
"""Fails the build when a source file includes a header of a layer it may not use.

The layers are the folders of src/, each its own library; a folder may use only the folders listed for
it below (the same ones its CMake target links). Headers of include/gpu_extender/<layer>/ (the public
API) belong to the layer their folder names; every other project header belongs to the folder of src/
it is in and is private to it: another layer may include only its public headers, except common's
(the toolkit every layer shares: JSON writing, file text, thread names) and from app (the wiring,
which puts the layers' parts together). Run by the build (target check_layers) before any library
compiles.
"""
import pathlib
import re
import sys

LAYERS = {  # folder: the folders it may use, besides itself
    "common": [],
    "wire": ["common"],
    "policy": ["common"],
    "usage": ["common", "wire", "policy"],
    "state": ["common", "wire", "policy", "usage"],
    "kube": ["common", "wire", "policy", "usage", "state"],
    "server": ["common", "wire", "policy", "usage", "state", "kube"],
    "tools": ["common", "wire", "policy", "usage", "state", "kube"],
    "app": ["common", "wire", "policy", "usage", "state", "kube", "server", "tools"],
}
# Layers whose private headers (src/<layer>/*.h) other layers may include; and layers that may include
# any layer's private headers.
SHARED_PRIVATE = {"common"}
WIRING = {"app"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main(root):
    root = pathlib.Path(root)
    api = root / "include/gpu_extender"
    problems = []
    owner = {}  # "gpu_extender/<layer>/<header>.h": its layer
    for header in sorted(api.rglob("*.h")):
        rel = header.relative_to(api)
        if len(rel.parts) != 2 or rel.parts[0] not in LAYERS:
            problems.append(f"{header.relative_to(root)}: a public header belongs in include/gpu_extender/<layer>/, "
                            f"one of {', '.join(LAYERS)}")
            continue
        owner[f"gpu_extender/{rel.as_posix()}"] = rel.parts[0]
    for path in sorted((root / "src").rglob("*")):
        if path.suffix not in (".h", ".cpp"):
            continue
        rel = path.relative_to(root / "src")
        layer = rel.parts[0]
        if layer not in LAYERS:
            problems.append(f"src/{rel}: folder {layer} is no layer in cmake/check_layers.py")
            continue
        allowed = set(LAYERS[layer]) | {layer}
        for name in INCLUDE.findall(path.read_text()):
            if name in owner:
                used = owner[name]
            elif (path.parent / name).exists():
                used = layer  # beside it, or below it in its own folder
            elif (root / "src" / name).exists():
                used = pathlib.Path(name).parts[0]
                if used != layer and used not in SHARED_PRIVATE and layer not in WIRING:
                    problems.append(f"src/{rel}: includes \"{name}\", a private header of layer {used}: "
                                    f"use its public headers (include/gpu_extender/{used}/), or make this one public")
                    continue
            else:
                continue  # generated, or a system header written with quotes
            if used not in allowed:
                problems.append(f"src/{rel}: includes \"{name}\" of layer {used}; {layer} may use only "
                                f"{', '.join(sorted(allowed))}")
    for name, layer in owner.items():
        header = root / "include" / name
        allowed = set(LAYERS[layer]) | {layer}
        for included in INCLUDE.findall(header.read_text()):
            used = owner.get(included)
            if used is None:
                problems.append(f"include/{name}: includes \"{included}\", which is not public: the API may include "
                                "only the API")
            elif used not in allowed:
                problems.append(f"include/{name}: includes \"{included}\" of layer {used}; {layer} may use only "
                                f"{', '.join(sorted(allowed))}")
    for p in problems:
        print(f"check_layers: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
