#!/usr/bin/env bash
# The no-retry campaign of issue #9 (docs/reliability.md, "No retries in CI: the campaign"):
# the README's test command (ci/test.sh, as CI runs it) RUNS times in a row in this checkout,
# with one core kept busy by a spinning process for the whole campaign. It stops at the first
# run that fails, so what it reports is a streak: every run is counted, none is skipped.
#
#   bash ci/campaign.sh RUNS [OUT_DIR]     (default OUT_DIR: /tmp/evident-campaign)
#
# OUT_DIR/run-N.log is each run's whole output; OUT_DIR/summary.txt one line per run (start,
# seconds, exit status, the suites' pass counts) and the streak at the end. Exit status: 0 when
# every run passed.
set -euo pipefail
cd "$(dirname "$0")/.."

runs="${1:?usage: bash ci/campaign.sh RUNS [OUT_DIR]}"
out="${2:-/tmp/evident-campaign}"
case "$runs" in '' | *[!0-9]*) echo "campaign: RUNS must be a number" >&2; exit 2 ;; esac
mkdir -p "$out"
summary="$out/summary.txt"

# One core kept busy: a spinning shell on the first CPU of this process's set, for the whole
# campaign (the tests stay free to run anywhere, as in CI).
cpu="$(taskset -cp $$ | sed 's/.*: //; s/[,-].*//')"
taskset -c "$cpu" bash -c 'while :; do :; done' &
spinner=$!
trap 'kill "$spinner" 2>/dev/null || true' EXIT

{
  echo "campaign: $runs runs of ci/test.sh at $(git rev-parse --short HEAD), one core (CPU $cpu) kept busy"
  echo "machine: $(nproc) CPUs, $(uname -r)"
} | tee "$summary"

streak=0
for i in $(seq 1 "$runs"); do
  start="$(date -u +%FT%TZ)"
  t0="$(date +%s)"
  set +e
  CI=true bash ci/test.sh >"$out/run-$i.log" 2>&1
  rc=$?
  set -e
  seconds=$(( $(date +%s) - t0 ))
  # The suites' own summary lines (ctest: unit, x11, ASan unit, ASan x11; pytest; fuzz smoke).
  counts="$(grep -E '^[0-9]+% tests passed|^[0-9]+ passed|^fuzz: smoke passed' "$out/run-$i.log" | tr '\n' ';' || true)"
  echo "run $i: start $start, ${seconds} s, exit $rc; $counts" | tee -a "$summary"
  if [ "$rc" -ne 0 ]; then
    echo "campaign: run $i failed (exit $rc); streak $streak; its log: $out/run-$i.log" | tee -a "$summary"
    exit 1
  fi
  streak=$i
done
echo "campaign: $streak of $runs runs passed in a row" | tee -a "$summary"
