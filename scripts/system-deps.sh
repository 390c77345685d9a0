#!/usr/bin/env bash
# System libraries Qt needs that a minimal Debian/Ubuntu image may lack (every desktop has them):
# libpulse0 for QtMultimedia (the camera), the xcb helpers for a real window.
# Installs what is missing when run as root with apt-get; otherwise says what to install.
set -euo pipefail
packages=(libpulse0 libegl1 libgl1 libxkbcommon0 libxkbcommon-x11-0 libfontconfig1 libdbus-1-3
          libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-shape0 libxcb-xinerama0 libxcb-randr0
          libxcb-render-util0 libxcb-image0)
[ "${1:-}" = "--with-xvfb" ] && packages+=(xvfb xauth)
command -v dpkg >/dev/null 2>&1 || exit 0   # not Debian-like: nothing we know how to check
missing=()
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing system libraries: ${missing[*]}"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "Some system libraries are missing; install them with:" >&2
  echo "  sudo apt-get install ${missing[*]}" >&2
fi
