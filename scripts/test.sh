#!/usr/bin/env bash
# The one test command: lint, type-check and run the test suite.
#   bash scripts/test.sh [extra pytest arguments]
# Creates .venv if it is missing and (re)installs gpudesk into it only when
# pyproject.toml changed, so a second run starts testing at once.
set -euo pipefail

SCRIPT="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$SCRIPT")/.."
bash scripts/system-deps.sh
source scripts/venv.sh
ensure_venv ".[test]" "gpudesk, pytest, pytestqt, torch, PyInstaller"

# Tests that use the real Secret Service need a session bus and an unlocked
# keyring. Provide both when the tools are installed (CI installs them) and no
# session bus exists yet.
if [[ -z "${DBUS_SESSION_BUS_ADDRESS:-}" && -z "${GPUDESK_IN_TEST_SESSION:-}" ]] \
    && command -v dbus-run-session >/dev/null; then
    export GPUDESK_IN_TEST_SESSION=1
    exec dbus-run-session -- bash "$SCRIPT" "$@"
fi
if [[ -n "${GPUDESK_IN_TEST_SESSION:-}" ]] && command -v gnome-keyring-daemon >/dev/null; then
    keyring_tmp="$(mktemp -d)"
    trap 'rm -rf "$keyring_tmp"' EXIT
    mkdir -m 700 "$keyring_tmp/run" "$keyring_tmp/data"
    if [[ -z "${XDG_RUNTIME_DIR:-}" || ! -w "${XDG_RUNTIME_DIR:-/nonexistent}" ]]; then
        export XDG_RUNTIME_DIR="$keyring_tmp/run"
    fi
    # A throwaway "login" keyring (own XDG_DATA_HOME, so the user's keyrings are
    # never touched), created and unlocked with a dummy password. The daemon
    # prints NAME=value lines for the variables its clients need.
    if keyring_env="$(printf 'gpudesk-test' | XDG_DATA_HOME="$keyring_tmp/data" \
            gnome-keyring-daemon --unlock --components=secrets)"; then
        while IFS= read -r line; do
            if [[ "$line" == *=* ]]; then export "${line?}"; fi
        done <<< "$keyring_env"
    else
        echo "warning: gnome-keyring-daemon did not start; keyring tests may fail" >&2
    fi
fi

export QT_QPA_PLATFORM="${QT_QPA_PLATFORM:-offscreen}"

status=0
echo "== ruff check ."
"$VENV/bin/ruff" check . || status=1
echo "== mypy gpudesk"
"$VENV/bin/mypy" gpudesk || status=1
echo "== pytest -q"
"$VENV/bin/python" -m pytest -q "$@" || status=1

if [[ $status -ne 0 ]]; then
    echo "FAILED (see above)" >&2
fi
exit $status
