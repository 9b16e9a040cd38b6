#!/usr/bin/env bash
# Builds Karpenter's kwok provider (sigs.k8s.io/karpenter/kwok, the release in ./version) from the Go module
# proxy into ~/.cache/gpu-extender/karpenter/<version>/bin/kwok, once, and prints two lines:
#   bin PATH      the binary
#   module DIR    the module's folder in the Go module cache (its CRDs: pkg/apis/crds, kwok/apis/crds)
# It needs Go 1.26.9 or newer: GOTOOLCHAIN fetches go1.27.3 from the proxy. A few minutes cold on 2 cores.
set -euo pipefail
export PATH=/usr/local/go/bin:$PATH
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.3}
here=$(cd "$(dirname "$0")" && pwd)
version=$(grep -v '^#' "$here/version" | grep . | head -1)
e2e=$(dirname "$here")  # tests/e2e, where the shared install script is
bin=$(bash "$e2e/go_install_cached.sh" karpenter "$version" sigs.k8s.io/karpenter/kwok)
dir=$(cd "$(mktemp -d)" && go mod download -json "sigs.k8s.io/karpenter@$version" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
echo "bin $bin/kwok"
echo "module $dir"
