#!/usr/bin/env bash
# Start gpudesk from a source checkout: bash scripts/run.sh [gpudesk arguments]
# Creates .venv if it is missing (see scripts/venv.sh).
set -euo pipefail

cd "$(dirname "$0")/.."
bash scripts/qt-deps.sh  # the window's system libraries: installed (root) or named
source scripts/venv.sh
ensure_venv .

exec "$VENV/bin/gpudesk" "$@"
