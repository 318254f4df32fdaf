#!/usr/bin/env bash
# The C++ suite under AddressSanitizer + UndefinedBehaviorSanitizer (docs/reliability.md
# "Fuzzing and sanitizers"): a separate build dir (${EVIDENT_SANITIZE_BUILD:-build-asan}) with
# -DEVIDENT_SANITIZE=ON (the engine libraries, the CLI, the daemon and every GoogleTest program
# instrumented; no Python module), then every test of the `unit` and `x11` labels on it. Any
# sanitizer report fails the test that triggered it: UBSan findings are fatal
# (-fno-sanitize-recover=all), ASan aborts on its first report, and LeakSanitizer checks every
# instrumented process at exit. The only suppressions are for leaks inside system libraries
# (ci/lsan.supp, each with its reason); nothing of evident's own is suppressed.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${EVIDENT_SANITIZE_BUILD:-build-asan}"

source ci/ccache.sh  # sets `launcher` (empty without ccache)
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEVIDENT_SANITIZE=ON \
  -DEVIDENT_BUILD_PYTHON=OFF -DPython_EXECUTABLE=/usr/bin/python3 "${launcher[@]}" >/dev/null
cmake --build "$BUILD" -j"$(nproc)"

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0:strict_string_checks=1:check_initialization_order=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$PWD/ci/lsan.supp:print_suppressions=0"
export EVIDENT_BIN="$PWD/$BUILD/engine/cli/evident"

echo "== C++ unit tests (ASan + UBSan)"
ctest --test-dir "$BUILD" -L unit --output-on-failure -j2 --timeout 600
echo "== C++ integration tests (ASan + UBSan, real Xvfb)"
ctest --test-dir "$BUILD" -L x11 --output-on-failure -j2 --timeout 900
