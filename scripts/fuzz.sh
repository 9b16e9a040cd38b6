#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan+UBSan) and runs each for FUZZ_SECONDS (default 20),
# starting from the committed corpus (tests/fuzz/corpus/<target>: what earlier long campaigns found,
# minimized), the samples, the captured scheduler bodies and the saved regressions. A crash is copied
# into tests/fuzz/regressions/<target>/ (commit it: the regression test replays it in every build) and
# fails the run.
#
# A long campaign that refreshes the committed corpus (run outside CI, then commit the corpus):
#   FUZZ_SECONDS=600 FUZZ_MINIMIZE=1 scripts/fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
SECONDS_EACH=${FUZZ_SECONDS:-20}
BUILD=${FUZZ_BUILD:-build-fuzz}
WORK=$(mktemp -d /tmp/gpu-extender-fuzz-XXXXXX)
trap 'rm -rf "$WORK"' EXIT

CC=clang CXX=clang++ cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPU_EXTENDER_FUZZ=ON -DBUILD_TESTING=OFF >/dev/null
cmake --build "$BUILD" -j"$(nproc)"

seed() {  # target, files...
  local dir="$WORK/seeds/$1"; shift
  mkdir -p "$dir"
  for f in "$@"; do [ -f "$f" ] && cp "$f" "$dir/" || true; done
}
F=tests/fixtures/kube-scheduler-v1.26
seed extender_args extender-config/samples/filter-*.json $F/full-mode/filter-1-request.json $F/node-cache-mode/*filter*.json
seed binding_args extender-config/samples/bind.json $F/full-mode/bind-3-request.json
seed preemption_args
seed watch_event
seed quantity
seed policy extender-config/policy.yaml
# Reviews as the API server sends them (CREATE of GPU pods, own terms with an empty one, UPDATE, DELETE,
# a dry run, a binding): committed with the corpus, copied here so that a minimizing run keeps them.
seed admission_review tests/fuzz/corpus/admission_review/*.json
printf '%s' '{"PodName":"p"}' > "$WORK/seeds/binding_args/partial"

found=0
for target in extender_args binding_args preemption_args watch_event quantity policy admission_review; do
  mkdir -p "$WORK/corpus/$target" "$WORK/crashes/$target" "tests/fuzz/regressions/$target" "tests/fuzz/corpus/$target"
  echo "== fuzz_$target for ${SECONDS_EACH}s"
  if ! "$BUILD/fuzz/fuzz_$target" -max_total_time="$SECONDS_EACH" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$WORK/crashes/$target/" \
      "$WORK/corpus/$target" "tests/fuzz/corpus/$target" "$WORK/seeds/$target" "tests/fuzz/regressions/$target" \
      2>"$WORK/$target.log"; then
    found=1
    tail -30 "$WORK/$target.log"
  fi
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|^#[0-9]+.*DONE" "$WORK/$target.log" | tr '\n' ' '; echo
  if [ "${FUZZ_MINIMIZE:-0}" = 1 ]; then
    # Keep the smallest set of inputs that covers everything this run and earlier ones reached.
    rm -rf "$WORK/merged/$target"; mkdir -p "$WORK/merged/$target"
    "$BUILD/fuzz/fuzz_$target" -merge=1 -max_len=65536 -timeout=10 -rss_limit_mb=2048 "$WORK/merged/$target" \
      "tests/fuzz/corpus/$target" "$WORK/corpus/$target" "$WORK/seeds/$target" 2>/dev/null
    rm -rf "tests/fuzz/corpus/$target"; mkdir -p "tests/fuzz/corpus/$target"
    cp "$WORK/merged/$target"/* "tests/fuzz/corpus/$target/" 2>/dev/null || true
    echo "corpus: $(ls "tests/fuzz/corpus/$target" | wc -l) inputs, $(du -sk "tests/fuzz/corpus/$target" | cut -f1) KiB"
  fi
  for crash in "$WORK/crashes/$target"/*; do
    [ -f "$crash" ] || continue
    cp "$crash" "tests/fuzz/regressions/$target/"
    echo "finding kept as tests/fuzz/regressions/$target/$(basename "$crash")"
    found=1
  done
done
if [ "$found" != 0 ]; then
  echo "fuzz: findings above; each is saved as a regression input"
  exit 1
fi
echo "fuzz: no findings"
