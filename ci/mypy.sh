#!/usr/bin/env bash
# mypy --strict over the Python package, with Debian's mypy (ci/packages.txt) and the settings in
# bindings/python/mypy.ini (docs/python.md, "Types"). Needs no build; the cache lives in the build
# dir so a rerun only checks what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${EVIDENT_BUILD:-build}"
mkdir -p "$BUILD"
CACHE="$(cd "$BUILD" && pwd)/mypy-cache"
cd bindings/python
start=$(date +%s.%N)
/usr/bin/python3 -m mypy --config-file mypy.ini --cache-dir "$CACHE"
echo "mypy --strict: $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }') s"
