#!/usr/bin/env bash
# The end-to-end suite on real control planes: run.sh [VERSION...] (default: every release in
# controlplane/versions). For each, builds etcd, kube-apiserver, kube-controller-manager and kube-scheduler
# if they are not cached yet (controlplane/build.sh; Go from /usr/local/go/bin), runs run_e2e.py against the
# extender binary ($EXTENDER, default build/gpu-extender) and prints its figures; ends with one line per
# release. Exits 1 if any scenario failed on any release. Logs of a failed run stay in the folder it names.
set -uo pipefail
export PATH=/usr/local/go/bin:$PATH
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$(dirname "$here")")  # tests/e2e -> the repository
extender=${EXTENDER:-$repo/build/gpu-extender}
python=/usr/bin/python3  # Debian's, with python3-yaml (scripts/install-deps.sh)
[ -x "$python" ] || python=python3
[ -x "$extender" ] || { echo "run.sh: no extender binary at $extender (make build first)" >&2; exit 2; }

versions=("$@")
[ ${#versions[@]} -gt 0 ] || mapfile -t versions < <(grep -v '^#' "$here/controlplane/versions" | grep .)
bins=$("$here/controlplane/build.sh" "${versions[@]}") || { echo "run.sh: building the control planes failed" >&2; exit 1; }
helm=$("$here/helm/build.sh") || { echo "run.sh: building helm failed" >&2; exit 1; }
karpenter_out=$("$here/karpenter/build.sh") || { echo "run.sh: building Karpenter failed" >&2; exit 1; }
karpenter="$(awk '$1 == "bin" {print $2}' <<<"$karpenter_out"):$(awk '$1 == "module" {print $2}' <<<"$karpenter_out")"

status=0
summary=()
for v in "${versions[@]}"; do
  bin=$(awk -v v="$v" '$1 == "bin" && $2 == v {print $3}' <<<"$bins")
  log=$(mktemp)
  "$python" "$here/run_e2e.py" --bin "$bin" --extender "$extender" --helm "$helm" --karpenter "$karpenter" 2>&1 | tee "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  summary+=("$(grep -E "^e2e v[^ ]+: [0-9]+/[0-9]+ scenarios" "$log" || echo "e2e v$v: did not finish")")
  rm -f "$log"
done
echo "=== end-to-end on real control planes"
printf '%s\n' "${summary[@]}"
exit $status
