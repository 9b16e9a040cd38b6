#!/usr/bin/env bash
# Prepares a node for gpu-extender, as the design documents do by hand: GPU labels, and the capacity of
# the custom resources (a status subresource patch: without a device plugin, nothing else reports them).
#
#   scripts/node-setup.sh NODE --gpu-model A100 --gpu-memory 40960 --gpu-count 8
#   scripts/node-setup.sh NODE --aaa 5
#   scripts/node-setup.sh NODE --bbb 1
#   scripts/node-setup.sh NODE --remove      # labels and custom resources off again
#
# Needs kubectl with rights to label nodes and patch nodes/status.
set -euo pipefail
usage() { sed -n '2,11p' "$0"; exit 2; }
[ $# -ge 2 ] || usage
node=$1; shift
patch_status() {  # op, resource (with / escaped as ~1), value
  local path="/status/capacity/$2"
  if [ "$1" = remove ]; then
    kubectl patch node "$node" --subresource=status --type=json -p "[{\"op\":\"remove\",\"path\":\"$path\"}]" || true
  else
    kubectl patch node "$node" --subresource=status --type=json -p "[{\"op\":\"add\",\"path\":\"$path\",\"value\":\"$3\"}]"
  fi
}
while [ $# -gt 0 ]; do
  case $1 in
    --gpu-model) kubectl label node "$node" --overwrite "gpu.nvidia.com/model=$2"; shift 2 ;;
    --gpu-memory) kubectl label node "$node" --overwrite "gpu.nvidia.com/memory=$2"; shift 2 ;;
    --gpu-count) kubectl label node "$node" --overwrite "gpu.nvidia.com/count=$2"; shift 2 ;;
    --aaa) patch_status add "custom.resource~1aaa" "$2"; shift 2 ;;
    --bbb) patch_status add "custom.resource~1bbb" "$2"; shift 2 ;;
    --remove)
      kubectl label node "$node" gpu.nvidia.com/model- gpu.nvidia.com/memory- gpu.nvidia.com/count- || true
      patch_status remove "custom.resource~1aaa"
      patch_status remove "custom.resource~1bbb"
      shift ;;
    *) usage ;;
  esac
done
# The kubelet copies capacity into allocatable for extended resources it does not manage on its next
# status update; show what the node reports now.
kubectl get node "$node" -o jsonpath='{.metadata.labels}{"\n"}{.status.allocatable}{"\n"}'
