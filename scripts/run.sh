#!/usr/bin/env bash
# Start gpudesk from a source checkout: bash scripts/run.sh [gpudesk arguments]
# Creates .venv if it is missing (see scripts/venv.sh).
set -euo pipefail

cd "$(dirname "$0")/.."
source scripts/venv.sh
ensure_venv .

exec "$VENV/bin/gpudesk" "$@"
