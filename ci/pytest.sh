#!/usr/bin/env bash
# Runs the Python package tests and the scenarios against the in-tree build, under /usr/bin/python3.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${EVIDENT_BUILD:-build}"
export PYTHONPATH="$PWD/bindings/python:$PWD/$BUILD/bindings/core${PYTHONPATH:+:$PYTHONPATH}"
export EVIDENT_BIN="${EVIDENT_BIN:-$PWD/$BUILD/engine/cli/evident}"
PYTEST=(/usr/bin/python3 -m pytest -p no:evident -p evident.pytest_plugin -q)
# The package, plugin, verifier and benchmark smoke tests, then the scenarios in parallel
# (-n 2, pytest-xdist): each worker owns its displays, which is what the scenarios prove.
"${PYTEST[@]}" bindings/python/tests bench "$@"
"${PYTEST[@]}" -n 2 scenarios "$@"
