#!/usr/bin/env bash
# The main job: a real session end to end, driven through the `evident` CLI.
# Starts a daemon on a private socket, creates an owned display, launches the fixture app, then
# runs one recorded session (its video bound in the receipt): click the text field, type the trigger phrase (the window turns green),
# freeze, observe, check the observed PNG's pixel with Pillow, finish with a claim about the
# colour, close. Verifies the receipt with `evident verify --frames` and the independent Python
# verifier, writes `evident report` (HTML and Markdown; the Markdown is appended to
# $GITHUB_STEP_SUMMARY when set), prints where the evidence is, and stops everything it started
# (trap).
# Assumes the build is at ${EVIDENT_BUILD:-build} (ci/setup.sh makes it).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
BUILD="${EVIDENT_BUILD:-build}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
EVIDENT="$BUILD/engine/cli/evident"
APP="$BUILD/fixtures/app/evident-fixture-app"
PY=/usr/bin/python3
for f in "$EVIDENT" "$APP"; do
  [ -x "$f" ] || { echo "main_job: $f is missing; run ci/setup.sh first" >&2; exit 2; }
done

umask 077
WORK="$(mktemp -d /tmp/evident-main-job.XXXXXX)"
RUN="$WORK/run"        # private socket dir; removed at the end
STATE="$WORK/state"    # the daemon's state dir: evidence persists here after the job
mkdir -m 700 "$RUN"
SOCK="$RUN/evident.sock"
LOG="$WORK/daemon.log"
DAEMON_PID=""

cleanup() {
  local rc=$?
  if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
    kill -TERM "$DAEMON_PID" 2>/dev/null || true
    wait "$DAEMON_PID" 2>/dev/null || true   # the daemon destroys its displays and apps
  fi
  rm -rf "$RUN"
  if [ "$rc" -ne 0 ]; then
    echo "main_job: FAILED (exit $rc); daemon log: $LOG" >&2
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ev() { "$EVIDENT" --json --socket "$SOCK" "$@"; }
# Reads one field from a JSON document on stdin (dotted path).
field() { "$PY" -c 'import json,sys
v=json.load(sys.stdin)
for k in sys.argv[1].split("."): v=v[int(k)] if isinstance(v,list) else v[k]
print(v if not isinstance(v,(dict,list)) else json.dumps(v))' "$1"; }
# Waits (bounded, 10 s) until the fixture app's event log has an event of type $1.
wait_app_event() {
  "$PY" - "$WORK/app-events.jsonl" "$1" <<'PYEOF'
import json, sys, threading, time
path, kind = sys.argv[1], sys.argv[2]
deadline = time.monotonic() + 10
while True:
    try:
        with open(path, encoding="utf-8") as f:
            if any(json.loads(line).get("type") == kind for line in f if line.endswith("\n")):
                break
    except FileNotFoundError:
        pass
    if time.monotonic() > deadline:
        sys.exit(f"main_job: the app did not log '{kind}' within 10 s")
    threading.Event().wait(0.02)
print(f"  the app logged '{kind}'")
PYEOF
}

# One session request; fails the job on an error response.
session() {
  local out
  if ! out="$(ev session --request "$1")"; then
    echo "main_job: session request failed: $out" >&2
    return 1
  fi
  printf '%s' "$out"
}

echo "== starting the daemon (socket $SOCK)"
"$EVIDENT" daemon --socket "$SOCK" --state-dir "$STATE" >"$LOG" 2>&1 &
DAEMON_PID=$!
# Wait for the daemon's "listening on" line (event-driven, bounded), not a fixed sleep.
if ! timeout 30 bash -c "tail -n +1 -F '$LOG' 2>/dev/null | grep -q -m1 'listening on'"; then
  echo "main_job: the daemon did not start:" >&2
  cat "$LOG" >&2
  exit 1
fi

echo "== creating a display"
D="$(ev display create --width 1024 --height 768)"
ID="$(printf '%s' "$D" | field display.id)"
GEN="$(printf '%s' "$D" | field display.generation)"
echo "display :$ID  generation $GEN"

echo "== launching the fixture app"
A="$(ev app launch "$ID" "$GEN" --wait-window-ms 10000 -- "$APP" --events "$WORK/app-events.jsonl")"
APP_ID="$(printf '%s' "$A" | field app.app_id)"
echo "app $APP_ID"
wait_app_event ready   # a mapped window is not yet an app that has drawn and taken focus

JOB_SHA="$(printf 'evident main job: type the trigger phrase, expect green' | sha256sum | cut -d' ' -f1)"

echo "== session: begin"
S="$(session "{\"op\":\"begin\",\"display_id\":$ID,\"generation\":\"$GEN\",\"app_id\":\"$APP_ID\",\"attempt_id\":\"main-job-1\",\"job_sha256\":\"$JOB_SHA\",\"record_video\":true}")"
SID="$(printf '%s' "$S" | field session_id)"
EVIDENCE="$(printf '%s' "$S" | field evidence_dir)"
echo "session $SID"

echo "== session: actions (click the text field, type the trigger phrase)"
S="$(session "{\"op\":\"actions\",\"session_id\":\"$SID\",\"sequence\":0,\"actions\":[{\"type\":\"click\",\"x\":100,\"y\":40},{\"type\":\"type\",\"text\":\"evident\"}]}")"
printf '%s' "$S" | "$PY" -c 'import json,sys; r=json.load(sys.stdin)["results"]; print("\n".join("  action %d %s: %s" % (x["index"],x["type"],x["status"]) for x in r)); sys.exit(any(x["status"]=="failed" for x in r))'

# The app's own word that the phrase arrived: it logs `trigger` once the green screen is drawn
# (fixtures/app/README.md), so the frame frozen next shows it.
wait_app_event trigger

echo "== session: freeze"
S="$(session "{\"op\":\"freeze\",\"session_id\":\"$SID\",\"sequence\":1}")"
FREEZE_SHA="$(printf '%s' "$S" | field frame.sha256)"

echo "== session: observe"
S="$(session "{\"op\":\"observe\",\"session_id\":\"$SID\",\"sequence\":2,\"pre_observation_sha256\":\"$FREEZE_SHA\"}")"
OBS_SHA="$(printf '%s' "$S" | field frame.sha256)"
OBS_PNG="$(printf '%s' "$S" | field frame.path)"

# The claim is ours to make: check the observed frame's background pixel with Pillow first.
BG="$("$PY" -c 'import sys
from PIL import Image
r,g,b = Image.open(sys.argv[1]).convert("RGB").getpixel((5,5))
print("green" if (r,g,b)==(0x20,0xA0,0x40) else "grey" if (r,g,b)==(0x40,0x40,0x40) else "#%02X%02X%02X"%(r,g,b))' "$OBS_PNG")"
echo "observed background at (5,5): $BG"
if [ "$BG" != green ]; then
  echo "main_job: the background is not green after typing the trigger phrase" >&2
  exit 1
fi

echo "== session: finish"
S="$(session "{\"op\":\"finish\",\"session_id\":\"$SID\",\"sequence\":3,\"observation_sha256\":\"$OBS_SHA\",\"claims\":{\"background\":\"$BG\",\"checked_pixel\":{\"x\":5,\"y\":5}}}")"

echo "== session: close (the receipt becomes receipt.json only now, after cleanup, and is signed)"
S="$(session "{\"op\":\"close\",\"session_id\":\"$SID\",\"sequence\":4}")"
RECEIPT="$(printf '%s' "$S" | field receipt_path)"
printf '%s' "$S" | "$PY" -c 'import json,sys; r=json.load(sys.stdin); assert r["closed"] and r["cleanup_complete"], r; print("closed; cleanup complete; receipt", r["receipt_id"])'

echo "== evident verify --frames --key (signature, subjects and run-log inclusion)"
KEY="$STATE/keys/signing.pub"   # the daemon's public key (created at its first start)
"$EVIDENT" verify "$RECEIPT" --frames "$EVIDENCE" --png "$OBS_PNG" --expect-job "$JOB_SHA" \
  --expect-uid "$(id -u)" --key "$KEY"
"$EVIDENT" --json verify "$RECEIPT" --frames "$EVIDENCE" --key "$KEY" | "$PY" -c 'import json,sys
r=json.load(sys.stdin); assert r["ok"] and r["authenticated"] is True, r
print("  authenticated by", r["key_id"])'

echo "== independent Python verifier"
if [ -f "$ROOT/bindings/python/evident/verify.py" ]; then
  PYTHONPATH="$ROOT/bindings/python${PYTHONPATH:+:$PYTHONPATH}" \
    "$PY" -m evident.verify "$RECEIPT" --frames "$EVIDENCE" --png "$OBS_PNG" --expect-job "$JOB_SHA" --expect-uid "$(id -u)"
else
  echo "main_job: bindings/python/evident/verify.py is missing" >&2
  exit 1
fi

echo "== evident report (HTML for people, Markdown for the CI step summary)"
"$EVIDENT" report "$EVIDENCE" --key "$KEY"
"$EVIDENT" report "$EVIDENCE" --key "$KEY" --format markdown
grep -q 'class="verdict ok"' "$EVIDENCE/report.html" || { echo "main_job: report.html is not verified" >&2; exit 1; }
grep -q 'data-signature="authenticated"' "$EVIDENCE/report.html" || { echo "main_job: report.html is not authenticated" >&2; exit 1; }
grep -q '<video id="video"' "$EVIDENCE/report.html" || { echo "main_job: report.html shows no verified video" >&2; exit 1; }
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  cat "$EVIDENCE/report.md" >> "$GITHUB_STEP_SUMMARY"
fi

echo
echo "evidence directory: $EVIDENCE"
echo "receipt:            $RECEIPT"
echo "signed envelope:    $EVIDENCE/receipt.dsse.json (key $KEY)"
echo "report:             $EVIDENCE/report.html"
echo "video:              $EVIDENCE/video.webm (bound in the receipt; linked from the report)"
echo "observed frame:     $OBS_PNG"
echo "main_job: PASS"
