#!/usr/bin/env bash
# Adds "Gallery" to the desktop's application menu for the current user, so it starts with a double click.
#   packaging/install-desktop-entry.sh              -> this checkout's .venv/bin/gallery-app (run `make venv` first)
#   packaging/install-desktop-entry.sh --bundle     -> the PyInstaller bundle dist/gallery-app/gallery-app (`make package`)
#   packaging/install-desktop-entry.sh PATH         -> any gallery-app executable
#   packaging/install-desktop-entry.sh --uninstall  -> removes the entry and the icon
# Honours XDG_DATA_HOME (default ~/.local/share).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
data_home="${XDG_DATA_HOME:-$HOME/.local/share}"
apps="$data_home/applications"
icons="$data_home/icons/hicolor/scalable/apps"
entry="$apps/gallery-app.desktop"
icon="$icons/gallery-app.svg"

refresh() {
  command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database -q "$apps" 2>/dev/null || true
  command -v gtk-update-icon-cache >/dev/null 2>&1 && gtk-update-icon-cache -q -t "$data_home/icons/hicolor" 2>/dev/null || true
}

case "${1:-}" in
  --uninstall)
    rm -f "$entry" "$icon"; refresh; echo "Removed $entry and $icon"; exit 0 ;;
  --bundle) exec_path="$here/dist/gallery-app/gallery-app"; hint="make package" ;;
  "") exec_path="$here/.venv/bin/gallery-app"; hint="make venv" ;;
  *) exec_path=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); hint="build or install gallery-app" ;;
esac
[ -x "$exec_path" ] || { echo "Run '$hint' first: $exec_path is missing." >&2; exit 1; }

mkdir -p "$apps" "$icons"
install -m 644 "$here/resources/icons/gallery-app.svg" "$icon"
# Exec paths with spaces must be quoted in a desktop entry.
sed -e "s|@EXEC@|\"$exec_path\"|" -e "s|@ICON@|gallery-app|" "$here/packaging/gallery-app.desktop.in" > "$entry.tmp"
chmod 644 "$entry.tmp"
mv "$entry.tmp" "$entry"
if command -v desktop-file-validate >/dev/null 2>&1; then desktop-file-validate "$entry"; fi
refresh
echo "Installed $entry (runs $exec_path) and the icon $icon"
