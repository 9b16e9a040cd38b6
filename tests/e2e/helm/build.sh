#!/usr/bin/env bash
# Builds the Helm the chart tests use (tests/e2e/helm/version) from the Go module proxy into
# ~/.cache/gpu-extender/helm/<version>/bin/helm, once (a few minutes on 2 cores; seconds when cached), and
# prints that path. Go from /usr/local/go/bin.
set -euo pipefail
export PATH=/usr/local/go/bin:$PATH
here=$(cd "$(dirname "$0")" && pwd)
version=$(grep -v '^#' "$here/version" | grep . | head -1)
bin=${XDG_CACHE_HOME:-$HOME/.cache}/gpu-extender/helm/$version/bin
if [ ! -x "$bin/helm" ]; then
  echo "helm/build.sh: building helm.sh/helm/v4/cmd/helm@$version (a few minutes, once)" >&2
  start=$SECONDS
  mkdir -p "$bin"
  (cd "$(mktemp -d)" && GOBIN="$bin" GOFLAGS=-trimpath go install "helm.sh/helm/v4/cmd/helm@$version") >&2
  echo "helm/build.sh: built in $(( SECONDS - start ))s" >&2
fi
echo "$bin/helm"
