# Sourced by run.sh and test.sh: ensure_venv SPEC [PYTHON-IMPORTS]
# Creates .venv if it is missing and pip-installs SPEC (".", ".[test]") into it
# only when pyproject.toml changed since the last install of that SPEC, or when
# one of the named modules does not import.
VENV=.venv

ensure_venv() {
    local spec=$1 imports=${2:-gpudesk} python=${PYTHON:-python3}
    if [[ ! -x "$VENV/bin/python" ]]; then
        "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
            || { echo "gpudesk needs Python >= 3.11 (found $("$python" --version))" >&2; exit 1; }
        "$python" -m venv "$VENV"
    fi
    local stamp="$VENV/.gpudesk-install-${spec//[^a-z]/}"
    local want
    want="$(sha256sum pyproject.toml | cut -d' ' -f1) $spec"
    if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]] \
        || ! "$VENV/bin/python" -c "import $imports" 2>/dev/null; then
        "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$spec"
        echo "$want" > "$stamp"
    fi
}
