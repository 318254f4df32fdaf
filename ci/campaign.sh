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
#
# Resuming: when OUT_DIR already has a summary.txt, the campaign continues it (run numbers and
# streak go on from its last line) instead of starting over, but only if that campaign has not
# failed or finished, and the code under test is the same: since the commit its first line names,
# nothing but docs/, bench/results/ (the benchmark's recorded output, read by no test) and this
# script changed, and the checkout has no uncommitted change. A run that was interrupted (the
# campaign stopped by hand, or its machine went away) has no summary line and is run again; the
# summary says where each stretch resumed, so no run is hidden.
set -euo pipefail
cd "$(dirname "$0")/.."

runs="${1:?usage: bash ci/campaign.sh RUNS [OUT_DIR]}"
out="${2:-/tmp/evident-campaign}"
case "$runs" in '' | *[!0-9]*) echo "campaign: RUNS must be a number" >&2; exit 2 ;; esac
mkdir -p "$out"
summary="$out/summary.txt"

# Where to start: 1 for a new campaign; after the last summarised run when resuming one.
first=1
if [ -s "$summary" ]; then
  since="$(sed -n '1s/^campaign: [0-9]* runs of ci\/test.sh at \([0-9a-f]*\),.*/\1/p' "$summary")"
  if [ -z "$since" ] || ! git rev-parse -q --verify "$since^{commit}" >/dev/null; then
    echo "campaign: $summary does not name a commit of this checkout; use a new OUT_DIR" >&2
    exit 2
  fi
  if grep -qE '^campaign: (run [0-9]+ failed|[0-9]+ of [0-9]+ runs passed)' "$summary"; then
    echo "campaign: the campaign in $out has ended (failed or finished); use a new OUT_DIR" >&2
    exit 2
  fi
  if ! git diff --quiet "$since" HEAD -- . ':(exclude)docs' ':(exclude)bench/results' ':(exclude)ci/campaign.sh' ||
    ! git diff --quiet HEAD || ! git diff --quiet --cached; then
    echo "campaign: the code changed since $since (beyond docs/, bench/results/ and ci/campaign.sh); use a new OUT_DIR" >&2
    exit 2
  fi
  last="$(sed -n 's/^run \([0-9]*\): .*exit 0;.*/\1/p' "$summary" | tail -n 1)"
  first=$(( ${last:-0} + 1 ))
fi

# One core kept busy: a spinning shell on the first CPU of this process's set, for the whole
# campaign (the tests stay free to run anywhere, as in CI).
cpu="$(taskset -cp $$ | sed 's/.*: //; s/[,-].*//')"
taskset -c "$cpu" bash -c 'while :; do :; done' &
spinner=$!
trap 'kill "$spinner" 2>/dev/null || true' EXIT

if [ ! -s "$summary" ]; then  # a new campaign (first is 1)
  {
    echo "campaign: $runs runs of ci/test.sh at $(git rev-parse --short HEAD), one core (CPU $cpu) kept busy"
    echo "machine: $(nproc) CPUs, $(uname -r)"
  } | tee "$summary"
else
  echo "resumed at run $first, $(date -u +%FT%TZ), at $(git rev-parse --short HEAD) (the same code), one core (CPU $cpu) kept busy" |
    tee -a "$summary"
fi

streak=$(( first - 1 ))
for i in $(seq "$first" "$runs"); do
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
