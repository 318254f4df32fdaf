#!/usr/bin/env bash
# Builds a container image in which the main job (ci/main_job.sh) runs: a Debian 12 root file
# system made by mmdebstrap from the Debian archive only, plus this tree's build outputs
# (the evident CLI and its daemon program, the fixture app) and the Python package. Reproducible: SOURCE_DATE_EPOCH
# (default: the last commit's time) fixes every timestamp in the tarball; the same archive state
# and the same build outputs give the same bytes. docs/scale.md, "The container image".
#
#   bash ci/image/build.sh [OUT.tar]        # default: $BUILD/image/evident-main.tar
#   podman import OUT.tar localhost/evident-main:latest
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD="${EVIDENT_BUILD:-build}"
OUT="${1:-$BUILD/image/evident-main.tar}"
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}"
BINS=("$BUILD/engine/cli/evident" "$BUILD/engine/cli/evident-daemon" "$BUILD/fixtures/app/evident-fixture-app")
for b in "${BINS[@]}"; do
  [ -x "$b" ] || { echo "image: $b is missing; build first (ci/setup.sh)" >&2; exit 2; }
done
command -v mmdebstrap >/dev/null || { echo "image: install mmdebstrap" >&2; exit 2; }

# The Debian packages that own the shared libraries the binaries load (usrmerge: try both
# spellings of the path), plus what the main job runs.
owners() {
  local lib real
  for b in "${BINS[@]}"; do ldd "$b" | awk '/=> \//{print $3}'; done | sort -u |
    while read -r lib; do
      real="$(readlink -f "$lib")"
      dpkg -S "$real" 2>/dev/null || dpkg -S "/usr$real" 2>/dev/null || dpkg -S "${real#/usr}" 2>/dev/null ||
        { echo "image: no package owns $real" >&2; exit 1; }
    done | cut -d: -f1 | sort -u
}
PKGS="xvfb xauth x11-xkb-utils python3 python3-pil ca-certificates $(owners | tr '\n' ' ')"

STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/src/build/engine/cli" "$STAGE/src/build/fixtures/app" "$STAGE/src/ci" \
  "$STAGE/src/bindings"
cp "$BUILD/engine/cli/evident" "$BUILD/engine/cli/evident-daemon" "$STAGE/src/build/engine/cli/"
cp "$BUILD/fixtures/app/evident-fixture-app" "$STAGE/src/build/fixtures/app/"
cp ci/main_job.sh "$STAGE/src/ci/"
cp -r bindings/python "$STAGE/src/bindings/"
find "$STAGE/src" -name __pycache__ -prune -exec rm -rf {} +
tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
  -C "$STAGE" -cf "$STAGE/src.tar" src

mkdir -p "$(dirname "$OUT")"
# --variant=apt: Essential packages + apt + what we include; the host's apt sources (the Debian
# archive) are the mirror. The customize hooks add the tree and drop files that differ per build.
mmdebstrap --variant=apt --format=tar --include="${PKGS// /,}" \
  --customize-hook="tar-in $STAGE/src.tar /" \
  --customize-hook='rm -f "$1"/etc/machine-id "$1"/var/cache/ldconfig/aux-cache' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
  bookworm "$OUT" </dev/null
sha256sum "$OUT"
