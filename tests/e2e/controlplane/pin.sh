#!/usr/bin/env bash
# Pins a Kubernetes release's control plane as a Go module in ./v<version>/ (go.mod, go.sum, tools.go), to be
# committed: build.sh then builds exactly those module versions. Needs the Go module proxy; run it once per new
# release named in ./versions. A release whose go.mod asks a newer Go than the machine's takes it from the
# module proxy: GOTOOLCHAIN=go1.27.3 ./pin.sh 1.38.0-beta.0 (and the same variable for build.sh and run.sh).
#
# Why a module of our own: k8s.io/kubernetes maps every k8s.io/* staging module to ./staging in its go.mod, so
# it cannot be required as it is. This module requires it and replaces each staging module by its published
# v0.<minor>.<patch>; etcd's server comes at the version that release's go.mod names (kubernetes requires it).
set -euo pipefail
export PATH=/usr/local/go/bin:$PATH GOFLAGS=-mod=mod
version=${1:?usage: pin.sh <kubernetes version, e.g. 1.37.2>}
here=$(cd "$(dirname "$0")" && pwd)
dir=$here/v$version
IFS=. read -r _ minor patch <<<"$version"
staging=v0.$minor.$patch

mkdir -p "$dir"
cd "$dir"
rm -f go.mod go.sum
go mod init gpu-extender.local/controlplane >/dev/null 2>&1
upstream_gomod=$(go mod download -json "k8s.io/kubernetes@v$version" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
staging_modules=$(awk '$2 == "=>" && $3 ~ /^\.\/staging\// {print $1}' "$upstream_gomod")
[ -n "$staging_modules" ] || { echo "pin.sh: no staging replaces in $upstream_gomod" >&2; exit 1; }
edits=("-require=k8s.io/kubernetes@v$version")
for m in $staging_modules; do edits+=("-replace=$m=$m@$staging"); done
go mod edit "${edits[@]}"
cat >tools.go <<'GO'
//go:build tools

// Package controlplane only names the commands build.sh builds, so that go.mod and go.sum pin them.
package controlplane

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
GO
go mod tidy
echo "pin.sh: pinned k8s.io/kubernetes v$version in $dir (etcd $(awk '$1 == "go.etcd.io/etcd/server/v3" {print $2}' go.mod))"
