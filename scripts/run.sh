#!/usr/bin/env bash
# Start gpudesk from a source checkout: bash scripts/run.sh [gpudesk arguments]
# Creates .venv if it is missing and installs gpudesk into it only when
# pyproject.toml changed.
set -euo pipefail

cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=.venv

if [[ ! -x "$VENV/bin/python" ]]; then
    "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
        || { echo "gpudesk needs Python >= 3.11 (found $("$PYTHON" --version))" >&2; exit 1; }
    "$PYTHON" -m venv "$VENV"
fi

stamp="$VENV/.gpudesk-run-install"
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" || ! -x "$VENV/bin/gpudesk" ]]; then
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e .
    echo "$want" > "$stamp"
fi

exec "$VENV/bin/gpudesk" "$@"
