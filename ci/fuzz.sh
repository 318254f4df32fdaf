#!/usr/bin/env bash
# Builds the libFuzzer harnesses of engine/fuzz (clang, ASan + UBSan, separate build dir) and runs
# them for a bounded time each. docs/reliability.md "Fuzzing and sanitizers".
#
#   ci/fuzz.sh smoke [SECONDS]       every target for SECONDS (default 5) from its seed corpus;
#                                    what CI runs (ci/test.sh)
#   ci/fuzz.sh campaign [SECONDS]    every target for SECONDS (default 1800), one after another,
#                                    growing a working corpus kept in $EVIDENT_FUZZ_BUILD/work/
#   ci/fuzz.sh TARGET SECONDS        one target (e.g. json_fuzz 60), working corpus as campaign
#   ci/fuzz.sh build                 only build
#   ci/fuzz.sh list                  the targets
#
# Any crash, sanitizer report, leak, per-input timeout (10 s, EVIDENT_FUZZ_TIMEOUT) or memory blow-up (2 GiB) fails
# the run: the input is saved under $EVIDENT_FUZZ_BUILD/artifacts/TARGET/ and the command to
# replay it is printed. Fix the engine, then commit the input to engine/fuzz/regressions/TARGET/
# (the unit test fuzz_replay_TARGET replays it from then on).
# Environment: EVIDENT_FUZZ_BUILD (default build-fuzz), CC/CXX (default clang/clang++),
# EVIDENT_FUZZ_TIMEOUT (per-input wall-clock timeout in s, default 10; libFuzzer measures wall
# time, so on a machine shared with builds a starved process can pass 10 s on an input that takes
# milliseconds: every "timeout" a loaded campaign reports is replayed alone before it counts).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${EVIDENT_FUZZ_BUILD:-build-fuzz}"
PER_INPUT="${EVIDENT_FUZZ_TIMEOUT:-10}"
TARGETS=(json_fuzz session_request_fuzz actions_fuzz task_request_fuzz agents_fuzz receipt_verify_fuzz
         png_decode_fuzz envelope_fuzz dsse_fuzz runlog_fuzz disclosure_fuzz)

usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 1 ] || usage
mode="$1"

build() {
  local launcher=()
  source ci/ccache.sh  # sets `launcher` (empty without ccache)
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER="${CC:-clang}" -DCMAKE_CXX_COMPILER="${CXX:-clang++}" \
    -DEVIDENT_FUZZ=ON -DEVIDENT_BUILD_TESTS=OFF -DEVIDENT_BUILD_PYTHON=OFF \
    -DPython_EXECUTABLE=/usr/bin/python3 "${launcher[@]}" >/dev/null
  cmake --build "$BUILD" -j"$(nproc)" --target "${TARGETS[@]}"
}

# run TARGET SECONDS WORKDIR: fuzz from the seeds (read-only) into WORKDIR.
run() {
  local t="$1" secs="$2" work="$3"
  local seeds="engine/fuzz/corpus/$t" art="$BUILD/artifacts/$t"
  mkdir -p "$work" "$art"
  local regressions=()
  [ -d "engine/fuzz/regressions/$t" ] && regressions=("engine/fuzz/regressions/$t")
  echo "== fuzz $t for ${secs}s"
  local start=$SECONDS rc=0
  ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}" \
  UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
    "$BUILD/engine/fuzz/$t" -max_total_time="$secs" -timeout="$PER_INPUT" -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$art/" "$work" "$seeds" "${regressions[@]}" \
      >"$BUILD/$t.log" 2>&1 || rc=$?
  grep -E '^stat::number_of_executed_units|^stat::new_units_added|^stat::peak_rss_mb' "$BUILD/$t.log" |
    tr '\n' ' ' || true
  if [ "$rc" != 0 ]; then echo "(exit $rc, $((SECONDS - start))s)"; else echo "($((SECONDS - start))s)"; fi
  if [ "$rc" != 0 ]; then
    tail -n 60 "$BUILD/$t.log"
    echo "fuzz: $t FAILED; inputs in $art/; replay: $BUILD/engine/fuzz/$t $art/<file>" >&2
    return 1
  fi
}

case "$mode" in
  list) printf '%s\n' "${TARGETS[@]}" ;;
  build) build ;;
  smoke|campaign)
    secs="${2:-$([ "$mode" = smoke ] && echo 5 || echo 1800)}"
    build
    failed=0
    for t in "${TARGETS[@]}"; do
      if [ "$mode" = smoke ]; then
        work="$(mktemp -d)"
        run "$t" "$secs" "$work" || failed=1
        rm -rf "$work"
      else
        run "$t" "$secs" "$BUILD/work/$t" || failed=1
      fi
    done
    [ "$failed" = 0 ] || { echo "fuzz: $mode found failures (above)" >&2; exit 1; }
    echo "fuzz: $mode passed: ${#TARGETS[@]} targets, ${secs}s each"
    ;;
  *)
    [ $# -eq 2 ] || usage
    found=0
    for t in "${TARGETS[@]}"; do [ "$t" = "$mode" ] && found=1; done
    [ "$found" = 1 ] || { echo "fuzz: unknown target $mode (ci/fuzz.sh list)" >&2; exit 2; }
    build
    run "$mode" "$2" "$BUILD/work/$mode"
    ;;
esac
