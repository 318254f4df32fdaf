#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: set everything up, then drive a real app on a real
# owned display through a full session, verify the receipt, and print where the evidence is.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
exec bash ci/main_job.sh
