#!/usr/bin/env bash
# go_install_cached.sh NAME VERSION PACKAGE: `go install PACKAGE@VERSION` into
# ~/.cache/gpu-extender/NAME/VERSION/bin, once (a later call finds the binary and builds nothing); prints
# that folder. Shared by helm/build.sh and karpenter/build.sh. Go from /usr/local/go/bin; GOTOOLCHAIN as
# the caller sets it.
set -euo pipefail
export PATH=/usr/local/go/bin:$PATH
name=$1 version=$2 package=$3
bin=${XDG_CACHE_HOME:-$HOME/.cache}/gpu-extender/$name/$version/bin
if [ ! -x "$bin/$(basename "$package")" ]; then
  echo "$name: building $package@$version (a few minutes, once)" >&2
  start=$SECONDS
  mkdir -p "$bin"
  (cd "$(mktemp -d)" && GOBIN="$bin" GOFLAGS=-trimpath go install "$package@$version") >&2
  echo "$name: built in $(( SECONDS - start ))s" >&2
fi
echo "$bin"
