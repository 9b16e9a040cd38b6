#!/usr/bin/env bash
# Builds the Helm the chart tests use (tests/e2e/helm/version) from the Go module proxy into
# ~/.cache/gpu-extender/helm/<version>/bin/helm, once (a few minutes on 2 cores; seconds when cached), and
# prints that path. Go from /usr/local/go/bin.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=$(grep -v '^#' "$here/version" | grep . | head -1)
e2e=$(dirname "$here")  # tests/e2e, where the shared install script is
bin=$(bash "$e2e/go_install_cached.sh" helm "$version" helm.sh/helm/v4/cmd/helm)
echo "$bin/helm"
