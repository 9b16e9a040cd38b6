#!/usr/bin/env bash
# Builds the real control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) of each release
# named in ./versions, or of the ones given as arguments, from the module pinned in ./v<version>/.
# Binaries go to $GPU_EXTENDER_K8S_CACHE/v<version>/bin (default ~/.cache/gpu-extender/controlplane), outside
# the build tree: built once per machine and version; a second run with the same go.mod/go.sum only checks a
# stamp. A cold build takes minutes (1.37: ~15 on 2 cores), so it says what it builds and, every minute, that
# it still is (on stderr). Prints the bin folder of each version on stdout ("bin <version> <path>").
set -euo pipefail
exec 3>&1 1>&2  # progress to stderr; the "bin" lines to the caller's stdout (fd 3)
export PATH=/usr/local/go/bin:$PATH CGO_ENABLED=0
here=$(cd "$(dirname "$0")" && pwd)
cache=${GPU_EXTENDER_K8S_CACHE:-$HOME/.cache/gpu-extender/controlplane}
command -v go >/dev/null || { echo "build.sh: no Go toolchain (expected /usr/local/go/bin/go)" >&2; exit 1; }

versions=("$@")
[ ${#versions[@]} -gt 0 ] || mapfile -t versions < <(grep -v '^#' "$here/versions" | grep .)

build_one() {
  local version=$1 module=$here/v$1 out=$cache/v$1/bin
  [ -f "$module/go.mod" ] || { echo "build.sh: no pinned module for $version: run ./pin.sh $version" >&2; return 1; }
  local stamp
  stamp=$(cat "$module/go.mod" "$module/go.sum" "$module/tools.go" | sha256sum | cut -c1-16)
  if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ]; then
    echo "build.sh: v$version cached in $out"
    return 0
  fi
  IFS=. read -r major minor _ <<<"$version"
  local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=v$version"
  ldflags+=" -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor"
  ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=v$version"
  mkdir -p "$out"
  rm -f "$out/.stamp"
  local started=$SECONDS
  echo "build.sh: building v$version (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) into $out;" \
    "a cold build takes 8-15 minutes on 2 cores"
  ( while sleep 60; do echo "build.sh: v$version still building ($(( (SECONDS - started) / 60 )) min)"; done ) &
  local ticker=$!
  # One go build for the four commands: the shared packages compile once and both cores stay busy.
  if ! (cd "$module" && go mod download && go build -trimpath -ldflags "$ldflags" -o "$out/" \
      go.etcd.io/etcd/server/v3 k8s.io/kubernetes/cmd/kube-apiserver \
      k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler); then
    kill "$ticker" 2>/dev/null
    echo "build.sh: building v$version failed" >&2
    return 1
  fi
  kill "$ticker" 2>/dev/null
  mv "$out/server" "$out/etcd"   # go names the command after its path: go.etcd.io/etcd/server/v3 -> server
  echo "$stamp" >"$out/.stamp"
  echo "build.sh: v$version built in $(( SECONDS - started ))s: $("$out/kube-apiserver" --version)"
}

for v in "${versions[@]}"; do build_one "$v"; done
for v in "${versions[@]}"; do echo "bin $v $cache/v$v/bin" >&3; done
