#!/usr/bin/env bash
# The benchmark: evident and its peers side by side in one run (see docs/performance.md).
#   bash bench/run.sh [--quick] [--out PATH] [--only ROW,...]
# Installs missing peer packages (Debian), builds evident with ci/setup.sh (into
# ${EVIDENT_BUILD:-build}; skip with EVIDENT_BENCH_SKIP_BUILD=1), then runs bench/bench.py.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
peers=(xvfb xauth x11-utils xdotool xterm scrot imagemagick python3-pil python3-pyvirtualdisplay
       python3-xlib python3-tk fonts-dejavu-core gcc libpng-dev)
missing=()
for p in "${peers[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "bench: installing peer packages: ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

BUILD="${EVIDENT_BUILD:-build}"
if [ -z "${EVIDENT_BENCH_SKIP_BUILD:-}" ]; then
  # A failed build is not fatal: rows whose evident side is missing say "not available".
  bash ci/setup.sh >&2 || echo "bench: build failed; missing evident tools are reported as not available" >&2
fi
exec /usr/bin/python3 bench/bench.py --build "$BUILD" "$@"
