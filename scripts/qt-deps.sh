#!/usr/bin/env bash
# The system libraries Qt's xcb platform plugin loads (PySide6 wheels do not ship them).
# Without them the window aborts with "Could not load the Qt platform plugin xcb".
# Checks with ldconfig; as root with apt-get installs what is missing, otherwise prints
# the one command that does and exits 1. Linux only; a no-op elsewhere and for
# QT_QPA_PLATFORM=offscreen.
set -euo pipefail

[[ "$(uname -s)" == Linux ]] || exit 0
[[ "${QT_QPA_PLATFORM:-}" == offscreen* ]] && exit 0

# library soname -> Debian/Ubuntu package
declare -A LIBS=(
    [libxcb-cursor.so.0]=libxcb-cursor0 [libxcb-icccm.so.4]=libxcb-icccm4
    [libxcb-keysyms.so.1]=libxcb-keysyms1 [libxcb-shape.so.0]=libxcb-shape0
    [libxcb-xinerama.so.0]=libxcb-xinerama0 [libxcb-randr.so.0]=libxcb-randr0
    [libxcb-render-util.so.0]=libxcb-render-util0 [libxcb-image.so.0]=libxcb-image0
    [libxkbcommon.so.0]=libxkbcommon0 [libxkbcommon-x11.so.0]=libxkbcommon-x11-0
    [libEGL.so.1]=libegl1 [libGL.so.1]=libgl1 [libfontconfig.so.1]=libfontconfig1
    [libdbus-1.so.3]=libdbus-1-3
)

have=$( (ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null || true) | awk '{print $1}')
missing=()
for lib in "${!LIBS[@]}"; do
    grep -qxF "$lib" <<<"$have" || missing+=("${LIBS[$lib]}")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)

if command -v apt-get >/dev/null; then
    if [[ $(id -u) -eq 0 ]]; then
        echo "gpudesk: installing the Qt system libraries: ${missing[*]}" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
        exit 0
    fi
    echo "gpudesk: Qt needs system libraries that are missing: ${missing[*]}" >&2
    echo "Install them with:" >&2
    echo "    sudo apt-get install -y ${missing[*]}" >&2
    exit 1
fi
echo "gpudesk: Qt needs system libraries that are missing (Debian names: ${missing[*]})." >&2
echo "Install your distribution's packages for them (on Fedora: sudo dnf install" \
     "xcb-util-cursor xcb-util-wm xcb-util-keysyms xcb-util-image xcb-util-renderutil" \
     "libxkbcommon-x11 mesa-libEGL fontconfig dbus-libs)." >&2
exit 1
