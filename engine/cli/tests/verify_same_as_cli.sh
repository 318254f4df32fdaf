#!/usr/bin/env bash
# `evident-verify ARGS` and `evident verify ARGS` must print the same stdout and stderr and exit
# with the same status, on good receipts (the goldens), bad ones (tampered, wrong expectations,
# missing, not JSON) and usage errors. Each case also states the exit status it must have, so two
# equally broken binaries cannot pass.
# Usage: verify_same_as_cli.sh EVIDENT_VERIFY EVIDENT SOURCE_DIR
set -uo pipefail
verify=$1
evident=$2
src=$3
golden=$src/receipts/golden
work=$(mktemp -d /tmp/evident-verify-same-XXXXXX)
trap 'rm -rf "$work"' EXIT

# A tampered copy of a golden (one claim changed: the claims digest no longer matches) and a file
# that is not strict JSON (a duplicate key).
mkdir -p "$work/tampered"
sed 's/"answer":42/"answer":43/' "$golden/three-actions/receipt.json" > "$work/tampered/receipt.json"
cmp -s "$golden/three-actions/receipt.json" "$work/tampered/receipt.json" && { echo "FAIL: tamper did nothing"; exit 1; }
printf '{"a":1,"a":2}' > "$work/dup.json"
printf 'not a key\n' > "$work/notakey.pem"

fail=0
cases=0
# run_case EXPECTED_STATUS [--pre-json] ARGS...
run_case() {
  local want=$1; shift
  local pre=()
  if [ "$1" = "--pre-json" ]; then pre=(--json); shift; fi
  "$evident" "${pre[@]}" verify "$@" > "$work/a.out" 2> "$work/a.err"; local sa=$?
  "$verify" "${pre[@]}" "$@" > "$work/b.out" 2> "$work/b.err"; local sb=$?
  cases=$((cases + 1))
  local what="[${pre[*]} $*]"
  if [ "$sa" -ne "$want" ] || [ "$sb" -ne "$want" ]; then
    echo "FAIL $what: exit status evident verify=$sa evident-verify=$sb, expected $want"; fail=1
  fi
  if ! cmp -s "$work/a.out" "$work/b.out"; then
    echo "FAIL $what: stdout differs"; diff "$work/a.out" "$work/b.out" | head -20; fail=1
  fi
  if ! cmp -s "$work/a.err" "$work/b.err"; then
    echo "FAIL $what: stderr differs"; diff "$work/a.err" "$work/b.err" | head -20; fail=1
  fi
  if [ ! -s "$work/a.out" ] && [ ! -s "$work/a.err" ]; then
    echo "FAIL $what: no output at all"; fail=1
  fi
}

g3=$golden/three-actions
v3=$golden/v3-three-actions
job=$(sed -n 's/.*"job_sha256":"\([0-9a-f]\{64\}\)".*/\1/p' "$v3/receipt.json")
[ ${#job} -eq 64 ] || { echo "FAIL: no job_sha256 in the golden"; exit 1; }

# good receipts: every check passes
run_case 0 "$g3/receipt.json" --frames "$g3/frames" --json
run_case 0 "$g3/receipt.json" --frames "$g3/frames"
run_case 0 --pre-json "$v3/receipt.json" --frames "$v3/frames"
run_case 0 "$v3/receipt.json" --frames "$v3/frames" --expect-job "$job" --expect-uid 1000 --json
run_case 0 "$golden/zero-actions/receipt.json" --json
# bad receipts: a check fails, or nothing can be read
run_case 1 "$work/tampered/receipt.json" --json
run_case 1 "$work/tampered/receipt.json"
run_case 1 "$g3/receipt.json" --expect-uid 4242 --json
run_case 1 "$g3/receipt.json" --frames "$work" --json
run_case 1 "$work/missing.json" --json
run_case 1 "$work/dup.json"
run_case 1 "$work/dup.json" --json
# usage errors
run_case 2 "$g3/receipt.json" --expect-job xyz --json
run_case 2 "$g3/receipt.json" --key "$work/notakey.pem" --json
run_case 2 --json
run_case 2 "$g3/receipt.json" --no-such-option

# The good JSON answer really is a pass.
"$verify" "$g3/receipt.json" --frames "$g3/frames" --json | grep -q '^{"authenticated":false,.*"ok":true' || {
  echo "FAIL: evident-verify's good answer is not ok:true"; fail=1; }
[ "$fail" -eq 0 ] && echo "ok: $cases cases identical"
exit "$fail"
