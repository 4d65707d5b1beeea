#!/usr/bin/env bash
# Build dist/GPUDesk.app (the spec's BUNDLE) and dist/gpudesk-<version>-macos.dmg.
#   bash packaging/build_macos.sh          (on macOS, with Xcode command line tools)
# The .icns comes from Apple's iconutil on an iconset rendered from the SVG; the
# command line is GPUDesk.app/Contents/MacOS/gpudesk.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${VENV:-.venv}/bin/python"
[[ -x "$PY" ]] || { echo "no $PY: run scripts/run.sh (or set VENV) first" >&2; exit 1; }

"$PY" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("PyInstaller") is None)' \
    || "$PY" -m pip install --quiet --disable-pip-version-check "pyinstaller>=6.10"

rm -rf build/gpudesk.iconset build/gpudesk.icns
"$PY" packaging/make_icons.py --out build/icons --iconset build/gpudesk.iconset
iconutil -c icns build/gpudesk.iconset -o build/gpudesk.icns  # the spec prefers this one

start=$SECONDS
"$PY" -m PyInstaller --noconfirm --distpath dist --workpath build/pyinstaller \
    packaging/gpudesk.spec
seconds=$((SECONDS - start))

version=$("$PY" -c 'import gpudesk; print(gpudesk.__version__)')
dmg="dist/gpudesk-$version-macos.dmg"
stage=build/dmg
rm -rf "$stage" "$dmg"
mkdir -p "$stage"
ditto dist/GPUDesk.app "$stage/GPUDesk.app"
ln -s /Applications "$stage/Applications"
hdiutil create -volname GPUDesk -srcfolder "$stage" -ov -format UDZO "$dmg"

echo "built dist/GPUDesk.app in ${seconds} s: $(du -sm dist/GPUDesk.app | cut -f1) MB"
echo "disk image: $dmg ($(du -sm "$dmg" | cut -f1) MB)"
