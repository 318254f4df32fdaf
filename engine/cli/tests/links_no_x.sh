#!/usr/bin/env bash
# The programs a reviewer or a CLI call runs must not load the desktop stack: evident-verify must
# run on a machine without X, and the `evident` front binary (every CLI call) must not pay for
# X, D-Bus or the engine at start-up (docs/cli.md "One front binary, one daemon program"). None of
# each binary's dynamic dependencies, direct (readelf NEEDED) or loaded through another library
# (ldd, the whole closure), may be an X or D-Bus library. The same check is run on
# `evident-daemon` (which links libX11 through the display module and libdbus through
# accessibility) and must find both there, so a broken pattern or an empty listing cannot make
# this test pass.
#
# CRYPTO says how the build links libcrypto into these front binaries (docs/receipts.md
# "Performance"): `static` (libcrypto.a, the default when Debian's libssl-dev has it) means no
# libcrypto.so may be among their dependencies, `shared` means it must be; evident-daemon always
# keeps the shared one, which is checked too, so the pattern is seen to match.
# Usage: links_no_x.sh static|shared EVIDENT_DAEMON BINARY...
set -euo pipefail
crypto=$1
control=$2
shift 2
case "$crypto" in static|shared) ;; *) echo "usage: links_no_x.sh static|shared DAEMON BINARY..."; exit 2 ;; esac
# X11 client libraries, XCB, xkbcommon, and the GL/EGL/DRM/Wayland display stack; D-Bus and AT-SPI.
x_libs='^lib(X[A-Za-z0-9]*|xcb[-_a-z0-9]*|xkbcommon[-_a-z0-9]*|xkbfile|xshmfence|GL[A-Za-z0-9]*|EGL|GLX|gbm|drm|wayland-[a-z]*|dbus-[0-9]+|atspi)\.so'

needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p'; }
closure() { ldd "$1" | awk '{ print $1 }' | sed 's#.*/##'; }

fail=0
for bin in "$@"; do
  name=$(basename "$bin")
  direct=$(needed "$bin")
  loaded=$(closure "$bin")
  if [ -z "$direct" ] || ! grep -q '^libc\.so' <<<"$direct"; then
    echo "FAIL: could not list $name's NEEDED entries (expected libc among them):"
    echo "$direct"
    fail=1
  fi
  if grep -Eq "$x_libs" <<<"$direct"; then
    echo "FAIL: $name has X or D-Bus libraries among its NEEDED entries:"
    grep -E "$x_libs" <<<"$direct"
    fail=1
  fi
  if grep -Eq "$x_libs" <<<"$loaded"; then
    echo "FAIL: $name loads X or D-Bus libraries (ldd):"
    grep -E "$x_libs" <<<"$loaded"
    fail=1
  fi
  if [ "$crypto" = static ] && grep -q '^libcrypto\.so' <<<"$loaded"; then
    echo "FAIL: $name loads libcrypto.so, but this build links libcrypto statically into it"
    fail=1
  elif [ "$crypto" = shared ] && ! grep -q '^libcrypto\.so' <<<"$loaded"; then
    echo "FAIL: $name does not load libcrypto.so, but this build links it shared"
    fail=1
  fi
  [ "$fail" -eq 0 ] && echo "ok: $name loads $(wc -l <<<"$loaded") libraries; needs: $(tr '\n' ' ' <<<"$direct")"
done
# The detector itself: evident-daemon does link libX11 and libdbus, so the pattern must find them.
if ! needed "$control" | grep -Eq "$x_libs" || ! closure "$control" | grep -q '^libX11\.so' ||
   ! closure "$control" | grep -q '^libdbus-1\.so' || ! needed "$control" | grep -q '^libcrypto\.so'; then
  echo "FAIL: the check did not find libX11, libdbus-1 and libcrypto in $(basename "$control")'s dependencies; the pattern is broken"
  fail=1
fi
exit "$fail"
