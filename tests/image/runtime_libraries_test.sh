#!/usr/bin/env bash
# The container image's runtime stage can run the binary: every shared library the binary needs comes
# from a package that stage installs, and the binary runs (--version, --check-config) with only those
# packages' libraries, nothing else from this machine. No container engine needed.
#
# Usage: runtime_libraries_test.sh BINARY DOCKERFILE
set -euo pipefail
BINARY=$1
DOCKERFILE=$2
fail() { echo "FAIL: $*" >&2; exit 1; }

# The runtime stage is what follows the last FROM; its packages are the words after `apt-get install`
# that are not options, up to the next `&&`.
runtime_stage=$(awk '/^FROM /{stage=""} {stage = stage $0 "\n"} END {printf "%s", stage}' "$DOCKERFILE")
packages=$(printf '%s' "$runtime_stage" | sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta' |
  grep -o 'apt-get install[^&]*' | sed 's/apt-get install//' | tr ' ' '\n' | grep -v '^-' | grep -v '^$' | sort -u)
[ -n "$packages" ] || fail "no apt-get install in the runtime stage of $DOCKERFILE"
echo "runtime stage installs: $(echo $packages)"

# The package that ships a library path (Debian 12 is usrmerged: /lib may be listed as /usr/lib).
package_of() {
  local path=$1 real
  real=$(readlink -f "$path")
  for candidate in "$path" "$real" "/usr$path" "/usr$real" "${path#/usr}" "${real#/usr}"; do
    dpkg -S "$candidate" 2>/dev/null | head -1 | cut -d: -f1 && return 0
  done
  return 1
}

missing=0
for lib in $(ldd "$BINARY" | awk '$3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u); do
  pkg=$(package_of "$lib") || fail "$lib: no Debian package ships it"
  if ! grep -qx "$pkg" <<<"$packages"; then
    echo "MISSING: $lib is in package $pkg, which the runtime stage does not install" >&2
    missing=1
  fi
done
[ "$missing" = 0 ] || fail "the image would not start (a shared library is missing)"

# Exactly those packages' libraries, in a directory of their own; the loader told to look only there.
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for pkg in $packages; do
  { dpkg -L "$pkg" 2>/dev/null | grep -E '/lib/.*\.so(\.[0-9]+)*$' || true; } | while read -r f; do
    if [ -e "$f" ]; then cp -L "$f" "$dir/"; fi
  done
done
loader=$(ldd "$BINARY" | awk '/ld-linux/ {print ($3 ~ /^\// ? $3 : $1)}')
[ -x "$loader" ] || fail "no dynamic loader found for $BINARY"
resolved=$("$loader" --inhibit-cache --library-path "$dir" --list "$BINARY")
echo "$resolved"
outside=$(echo "$resolved" | awk '$3 ~ /^\// {print $3}' | grep -v "^$dir/" || true)
[ -z "$outside" ] || fail "libraries resolved outside the runtime packages: $outside"

run() { "$loader" --inhibit-cache --library-path "$dir" "$BINARY" "$@"; }
version=$(run --version) || fail "--version failed with only the runtime libraries"
echo "--version: $version"
run --check-config >/dev/null || fail "--check-config failed with only the runtime libraries"

# The commit reaches the image as a build argument (.dockerignore keeps .git out of the context).
grep -q '^ARG GIT_COMMIT' "$DOCKERFILE" || fail "the Dockerfile takes no GIT_COMMIT build argument"
grep -q 'GPU_EXTENDER_GIT_COMMIT=\${GIT_COMMIT}' "$DOCKERFILE" || fail "GIT_COMMIT is not passed to the build"
echo "PASS"
