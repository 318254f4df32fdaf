#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (as root, or with sudo) and builds Evident.
# Idempotent: installs only missing packages, then configures and builds into ${EVIDENT_BUILD:-build}.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

mapfile -t pkgs < <(grep -vE '^\s*(#|$)' ci/packages.txt)
missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${#missing[@]} Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

BUILD="${EVIDENT_BUILD:-build}"
source ci/ccache.sh  # sets `launcher` (empty without ccache)
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPython_EXECUTABLE=/usr/bin/python3 -DPYTHON_EXECUTABLE=/usr/bin/python3 "${launcher[@]}" >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
echo "setup: built into $BUILD"
