#!/usr/bin/env bash
# Debian packages the test suite uses: Xvfb for screenshots, a session bus and
# gnome-keyring for the real Secret Service, OpenSSH as the "rented machine",
# rsync as the sync baseline, and the X/EGL libraries Qt loads.
# Installs only what is missing, and only where it can (root + apt-get).
set -euo pipefail

PACKAGES=(
    xvfb xauth dbus dbus-x11 gnome-keyring
    openssh-server openssh-client rsync
    libegl1 libgl1 libxkbcommon0 libxkbcommon-x11-0 libfontconfig1 libdbus-1-3
    libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-shape0 libxcb-xinerama0
    libxcb-randr0 libxcb-render-util0 libxcb-image0
)

missing=()
for pkg in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$pkg")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
    echo "note: missing Debian packages (${missing[*]}); install them with apt-get" >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
