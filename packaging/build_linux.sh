#!/usr/bin/env bash
# Build the Linux one-folder app: dist/gpudesk/ (gpudesk-gui, gpudesk, _internal/),
# plus gpudesk.desktop and gpudesk.png beside the executables.
#   bash packaging/build_linux.sh
# VENV=DIR picks the virtual environment (default .venv, as scripts/run.sh makes it);
# INSTALL_DIR=/opt/gpudesk writes the .desktop file for where the folder will be
# copied (default: where it is built).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${VENV:-.venv}/bin/python"
[[ -x "$PY" ]] || { echo "no $PY: run scripts/run.sh (or set VENV) first" >&2; exit 1; }

"$PY" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("PyInstaller") is None)' \
    || "$PY" -m pip install --quiet --disable-pip-version-check "pyinstaller>=6.10"

start=$SECONDS
"$PY" -m PyInstaller --noconfirm --distpath dist --workpath build/pyinstaller \
    packaging/gpudesk.spec
seconds=$((SECONDS - start))

out=dist/gpudesk
target="${INSTALL_DIR:-$(cd "$out" && pwd)}"
cp resources/icons/gpudesk.png "$out/gpudesk.png"
cat > "$out/gpudesk.desktop" <<DESKTOP
[Desktop Entry]
Type=Application
Name=GPUDesk
GenericName=Cloud GPU planner
GenericName[zh_CN]=云 GPU 规划
Comment=Plan, rent, sync, train and watch cloud GPUs
Exec=$target/gpudesk-gui
Icon=$target/gpudesk.png
Terminal=false
Categories=Development;Science;
StartupWMClass=gpudesk
DESKTOP

echo "built $out in ${seconds} s: $(du -sm "$out" | cut -f1) MB"
echo "install the menu entry: cp $out/gpudesk.desktop ~/.local/share/applications/"
