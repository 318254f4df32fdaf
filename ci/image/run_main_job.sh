#!/usr/bin/env bash
# Runs the main job (ci/main_job.sh) in N containers of the image at once with podman, then
# verifies every receipt on the host with the host's `evident verify` and the independent
# Python verifier. Not part of ci/test.sh (it needs podman, mmdebstrap and the Debian archive;
# ~4 min to build the image): docs/scale.md, "The container image".
#
#   bash ci/image/run_main_job.sh IMAGE.tar [N]     # default N = 2
#
# podman here: rootful, cgroup v1 "hybrid" (crun refuses it, so runc), and raising rlimits in
# the container is not permitted (so explicit ulimits at or below the host's).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$PWD"
TAR="${1:?usage: run_main_job.sh IMAGE.tar [N]}"
N="${2:-2}"
BUILD="${EVIDENT_BUILD:-build}"
EVIDENT="$ROOT/$BUILD/engine/cli/evident"
RUNTIME="${EVIDENT_OCI_RUNTIME:-runc}"
IMAGE="localhost/evident-main:latest"
OUT="$(mktemp -d /tmp/evident-containers.XXXXXX)"
podman import "$TAR" "$IMAGE" >/dev/null
pids=()
for i in $(seq 1 "$N"); do
  mkdir -p "$OUT/c$i"
  podman --runtime "$RUNTIME" run --rm --network=none --ulimit nofile=1024:1024 \
    --ulimit nproc=1024:1024 -v "$OUT/c$i:/tmp" -w /src "$IMAGE" bash ci/main_job.sh \
    >"$OUT/c$i.log" 2>&1 &
  pids+=("$!")
done
rc=0
for i in $(seq 1 "$N"); do
  if wait "${pids[$((i - 1))]}"; then echo "container $i: main job PASS"; else
    echo "container $i: main job FAILED (log: $OUT/c$i.log)"; rc=1; fi
done
[ "$rc" -eq 0 ] || exit 1
ids=()
for i in $(seq 1 "$N"); do
  receipt="$(ls "$OUT"/c"$i"/evident-main-job.*/state/evidence/ses-*/receipt.json)"
  "$EVIDENT" verify "$receipt" --frames "$(dirname "$receipt")" | tail -n 1
  PYTHONPATH="$ROOT/bindings/python" /usr/bin/python3 -m evident.verify "$receipt" \
    --frames "$(dirname "$receipt")" | tail -n 1
  ids+=("$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["receipt_id"])' "$receipt")")
done
[ "$(printf '%s\n' "${ids[@]}" | sort -u | wc -l)" -eq "$N" ] || { echo "receipts not distinct" >&2; exit 1; }
echo "all $N containers' receipts verified on the host: $OUT"
