#!/usr/bin/env bash
# The compiler holds everyone but the placement ledger to reading the cluster view (ClusterView::Write):
# view_write_outside_owner.cpp compiles when it writes through the ledger and fails when it writes the
# view itself, for the reason that it may not make a Write. Usage: check_view_writes.sh CXX SOURCE_DIR
set -euo pipefail
CXX=$1
ROOT=$2
SNIPPET=$ROOT/tests/compile/view_write_outside_owner.cpp
compile() { "$CXX" -std=c++20 -fsyntax-only -I "$ROOT/include" "$@" "$SNIPPET"; }
if ! compile -DTHROUGH_THE_LEDGER; then
  echo "FAIL: the write through the ledger does not compile (the check itself is broken)"
  exit 1
fi
if out=$(compile 2>&1); then
  echo "FAIL: a write of the view outside the ledger compiles"
  exit 1
fi
if ! grep -q "Write" <<<"$out"; then
  echo "FAIL: the write outside the ledger fails to compile, but not for want of a Write:"
  echo "$out"
  exit 1
fi
echo "ok: only the ledger writes the view"
