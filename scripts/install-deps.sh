#!/usr/bin/env bash
# Installs every Debian 12 package the build, the tests and the benchmarks need.
# Idempotent: safe to run on every `make run` / `make test`; works as root or with sudo.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config ccache clang libclang-rt-14-dev
  libcpp-httplib-dev libssl-dev zlib1g-dev libbrotli-dev
  nlohmann-json3-dev libsimdjson-dev libyaml-cpp-dev
  libspdlog-dev libfmt-dev
  prometheus-cpp-dev
  catch2
  python3 python3-yaml curl openssl
  prometheus
)

if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ "${#missing[@]}" -eq 0 ] && [ "${FORCE_APT_UPDATE:-0}" != "1" ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]:-(refresh)}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null
