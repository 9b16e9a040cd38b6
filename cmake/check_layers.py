#!/usr/bin/env python3
"""Fails the build when a source file includes a header of a layer it may not use.

The layers are the folders of src/, each its own library; a folder may use only the folders listed for
it below (the same ones its CMake target links). Headers of include/gpu_extender/ (the public API)
belong to the layer named for them here; every other project header belongs to the folder it is in.
Run by the build (target check_layers) before any library compiles.
"""
import pathlib
import re
import sys

LAYERS = {  # folder: the folders it may use, besides itself
    "common": [],
    "wire": ["common"],
    "policy": ["common"],
    "usage": ["common", "wire", "policy"],
    "kube": ["common", "wire", "policy", "usage"],
    "server": ["common", "wire", "policy", "usage", "kube"],
    "tools": ["common", "wire", "policy", "usage", "kube"],
    "app": ["common", "wire", "policy", "usage", "kube", "server", "tools"],
}
PUBLIC = {  # include/gpu_extender/<header>.h: its layer
    "common": ["build_info", "status", "node_view", "pod_request", "quantity", "resources", "verdict", "view_schema"],
    "wire": ["wire", "wire_encode"],
    "policy": ["deletion_cost", "explain", "gpu_share", "group_plan", "policy", "policy_config", "policy_holder", "score_scaling"],
    "usage": ["gpu_utilization", "usage_source"],
    "kube": ["binder", "cluster_view", "group_book", "kube_config", "kube_connection", "node_source", "placement_ledger"],
    "server": ["extender_service"],
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main(root):
    root = pathlib.Path(root)
    owner = {f"gpu_extender/{h}.h": layer for layer, headers in PUBLIC.items() for h in headers}
    problems = []
    for header in sorted((root / "include/gpu_extender").glob("*.h")):
        if f"gpu_extender/{header.name}" not in owner:
            problems.append(f"{header.relative_to(root)}: public header with no layer in cmake/check_layers.py")
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
            else:
                continue  # generated, or a system header written with quotes
            if used not in allowed:
                problems.append(f"src/{rel}: includes \"{name}\" of layer {used}; {layer} may use only "
                                f"{', '.join(sorted(allowed))}")
    public_layer = {h: l for h, l in owner.items()}
    for header in sorted((root / "include/gpu_extender").glob("*.h")):
        layer = public_layer.get(f"gpu_extender/{header.name}")
        if layer is None:
            continue
        allowed = set(LAYERS[layer]) | {layer}
        for name in INCLUDE.findall(header.read_text()):
            used = public_layer.get(name)
            if used is None:
                problems.append(f"include/{header.relative_to(root / 'include')}: includes \"{name}\", "
                                "which is not public: the API may include only the API")
            elif used not in allowed:
                problems.append(f"include/{header.relative_to(root / 'include')}: includes \"{name}\" of layer "
                                f"{used}; {layer} may use only {', '.join(sorted(allowed))}")
    for p in problems:
        print(f"check_layers: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
