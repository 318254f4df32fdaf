#!/usr/bin/env bash
# evident-verify must run on a machine without an X stack: none of its dynamic dependencies,
# direct (readelf NEEDED) or loaded through another library (ldd, the whole closure), may be an X
# library. The same check is run on `evident` (which links libX11 through the display module) and
# must find X there, so a broken pattern or an empty listing cannot make this test pass.
# Usage: verify_links_no_x.sh EVIDENT_VERIFY EVIDENT
set -euo pipefail
verify=$1
evident=$2
# X11 client libraries, XCB, xkbcommon, and the GL/EGL/DRM/Wayland display stack.
x_libs='^lib(X[A-Za-z0-9]*|xcb[-_a-z0-9]*|xkbcommon[-_a-z0-9]*|xkbfile|xshmfence|GL[A-Za-z0-9]*|EGL|GLX|gbm|drm|wayland-[a-z]*)\.so'

needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p'; }
closure() { ldd "$1" | awk '{ print $1 }' | sed 's#.*/##'; }

fail=0
direct=$(needed "$verify")
loaded=$(closure "$verify")
if [ -z "$direct" ] || ! grep -q '^libcrypto\.so' <<<"$direct"; then
  echo "FAIL: could not list evident-verify's NEEDED entries (expected libcrypto among them):"
  echo "$direct"
  fail=1
fi
if grep -Eq "$x_libs" <<<"$direct"; then
  echo "FAIL: evident-verify has X libraries among its NEEDED entries:"
  grep -E "$x_libs" <<<"$direct"
  fail=1
fi
if grep -Eq "$x_libs" <<<"$loaded"; then
  echo "FAIL: evident-verify loads X libraries (ldd):"
  grep -E "$x_libs" <<<"$loaded"
  fail=1
fi
# The detector itself: `evident` does link libX11, so the same pattern must find it.
if ! needed "$evident" | grep -Eq "$x_libs" || ! closure "$evident" | grep -q '^libX11\.so'; then
  echo "FAIL: the check did not find libX11 in evident's dependencies; the pattern is broken"
  fail=1
fi
if [ "$fail" -eq 0 ]; then
  echo "ok: evident-verify needs: $(tr '\n' ' ' <<<"$direct")"
fi
exit "$fail"
