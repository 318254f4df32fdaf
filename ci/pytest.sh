#!/usr/bin/env bash
# Runs the Python package tests and the scenarios against the in-tree build, under /usr/bin/python3.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${EVIDENT_BUILD:-build}"
export PYTHONPATH="$PWD/bindings/python:$PWD/$BUILD/bindings/core${PYTHONPATH:+:$PYTHONPATH}"
export EVIDENT_BIN="${EVIDENT_BIN:-$PWD/$BUILD/engine/cli/evident}"
PYTEST=(/usr/bin/python3 -m pytest -p no:evident -p evident.pytest_plugin -q)
# Static types first (seconds): mypy --strict over the package (ci/mypy.sh).
bash ci/mypy.sh
# The package, plugin, verifier and benchmark smoke tests, then the scenarios in parallel
# (-n 2, pytest-xdist): each worker owns its displays, which is what the scenarios prove.
# The scenarios run as two CI shards (separate processes, each with -n 2) whose bundles
# `evident merge` must verify and find an exact cover of one plan (docs/scale.md).
"${PYTEST[@]}" bindings/python/tests bench "$@"
SHARDS="${EVIDENT_SCENARIO_SHARDS_DIR:-$PWD/evidence/scenario-shards}"
rm -rf "$SHARDS"
# Each shard's engines keep a state dir outside the bundle whose signing key the merge trusts
# (pinned here by path, as a CI secret would be); the merge signs its manifest with its own key.
for i in 1 2; do
  rc=0
  "$EVIDENT_BIN" key init --state-dir "$SHARDS/state-$i" >/dev/null
  "${PYTEST[@]}" -n 2 --evident-shard="$i/2" --evident-dir="$SHARDS/shard-$i" \
    --evident-state-dir="$SHARDS/state-$i" scenarios "$@" || rc=$?
  [ "$rc" -eq 0 ] || [ "$rc" -eq 5 ] || exit "$rc"   # 5: a selection (-k) left this shard empty
done
"$EVIDENT_BIN" key init --state-dir "$SHARDS/merger" >/dev/null
"$EVIDENT_BIN" merge "$SHARDS/shard-1" "$SHARDS/shard-2" -o "$SHARDS/merged" --require-passed \
  --key "$SHARDS/state-1/keys/signing.pub" --key "$SHARDS/state-2/keys/signing.pub" \
  --state-dir "$SHARDS/merger" | tail -n 3
"$EVIDENT_BIN" merge --check "$SHARDS/merged" --key "$SHARDS/merger/keys/signing.pub" | tail -n 1
