#!/usr/bin/env bash
# OpenCV is loaded only by `wait image` (the module libevident-match.so, opened on the first
# search): no engine binary may map it at start-up, where it cost every CLI call ~25 ms (LAPACK,
# BLAS, gfortran, TBB and GL came with it). Checked on the whole loaded closure (ldd) of each
# binary given; the module itself must show OpenCV, so a broken pattern cannot make this pass.
# Usage: links_no_opencv.sh MODULE BINARY...
set -euo pipefail
module=$1
shift
closure() { ldd "$1" | awk '{ print $1 }' | sed 's#.*/##'; }
fail=0
for bin in "$@"; do
  [ -e "$bin" ] || { echo "FAIL: $bin does not exist"; fail=1; continue; }
  if closure "$bin" | grep -q '^libopencv_'; then
    echo "FAIL: $bin loads OpenCV at start-up:"
    closure "$bin" | grep '^libopencv_'
    fail=1
  else
    echo "ok: $(basename "$bin") loads $(closure "$bin" | wc -l) libraries, none of OpenCV"
  fi
done
if ! closure "$module" | grep -q '^libopencv_imgproc'; then
  echo "FAIL: the check did not find OpenCV in $module's dependencies; the pattern is broken"
  fail=1
fi
exit "$fail"
