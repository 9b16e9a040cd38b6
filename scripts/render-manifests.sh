#!/usr/bin/env bash
# Renders manifests/ from the Helm chart, the one source of what gpu-extender installs: for clusters
# where Helm is not used, `kubectl apply -f manifests/gpu-extender.yaml` installs what
# `helm install gpu-extender charts/gpu-extender -n gpu-extender --set tls.enabled=false` would, and
# manifests/examples/NAME.yaml what charts/gpu-extender/examples/NAME.yaml adds to it.
#
#   scripts/render-manifests.sh [OUT]   (default: manifests/; HELM=path, else tests/e2e/helm/build.sh's)
#
# Fixed inputs, so the output is the same on every machine: release gpu-extender in namespace
# gpu-extender, Kubernetes 1.34.4 (the oldest supported release: the scheduler's image may be older than
# the API server, never newer; see docs/kubernetes-releases.md to set another), no helm test pod. TLS is
# off in these files (HTTP behind the NetworkPolicy, as before the chart): keys made at render time
# would be shared by everyone who applies them. Helm makes them per cluster; the cert-manager example
# takes them from cert-manager. The e2e suite renders again and fails when a committed file is stale.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$repo/manifests}
helm=${HELM:-$(bash "$repo/tests/e2e/helm/build.sh")}
chart=$repo/charts/gpu-extender
mkdir -p "$out/examples"

render() {  # render FILE [helm values args...]
  local file=$1
  shift
  {
    echo "# Rendered from charts/gpu-extender by scripts/render-manifests.sh: do not edit; change the chart and"
    echo "# run the script. kubectl apply -f this file (docs/deploying.md)."
    echo "---"
    cat "$repo/manifests/namespace.yaml"
    "$helm" template gpu-extender "$chart" --namespace gpu-extender --kube-version 1.34.4 \
      --set chartTest.enabled=false "$@"
  } >"$file"
}

render "$out/gpu-extender.yaml" --set tls.enabled=false --set webhook.enabled=false
for example in "$chart"/examples/*.yaml; do
  name=$(basename "$example" .yaml)
  if [ "$name" = cert-manager ]; then
    render "$out/examples/$name.yaml" -f "$example"
  else
    render "$out/examples/$name.yaml" -f "$example" --set tls.enabled=false --set webhook.enabled=false
  fi
done
echo "render-manifests: wrote $out/gpu-extender.yaml and $(ls "$out/examples" | wc -l) examples" >&2
