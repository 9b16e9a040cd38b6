#!/usr/bin/env bash
# Runs clang-tidy with the project's .clang-tidy over every source file; exits non-zero on a finding.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
[ -f "$BUILD/compile_commands.json" ] || cmake -S . -B "$BUILD" >/dev/null
files=$(git ls-files 'src/*.cpp')
out=$(clang-tidy -p "$BUILD" --quiet $files 2>/dev/null || true)
if echo "$out" | grep -E "(warning|error):" ; then exit 1; fi
echo "clang-tidy: clean ($(echo $files | wc -w) files)"
