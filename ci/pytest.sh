#!/usr/bin/env bash
# Runs the Python package tests and the scenarios against the in-tree build, under /usr/bin/python3.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${EVIDENT_BUILD:-build}"
export PYTHONPATH="$PWD/bindings/python:$PWD/$BUILD/bindings/core${PYTHONPATH:+:$PYTHONPATH}"
export EVIDENT_BIN="${EVIDENT_BIN:-$PWD/$BUILD/engine/cli/evident}"
paths=()
for d in bindings/python/tests scenarios bench; do
  if [ -d "$d" ] && ls "$d"/test_*.py >/dev/null 2>&1; then paths+=("$d"); fi
done
if [ "${#paths[@]}" -eq 0 ]; then
  echo "no Python tests yet"; exit 0
fi
exec /usr/bin/python3 -m pytest -p no:evident -p evident.pytest_plugin -q "${paths[@]}" "$@"
