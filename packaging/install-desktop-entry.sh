#!/usr/bin/env bash
# Adds "Gallery" to the desktop's application menu for the current user, pointing at this checkout's
# virtualenv (run `make venv` first). Undo with: rm ~/.local/share/applications/gallery-app.desktop
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
exec_path="$here/.venv/bin/gallery-app"
[ -x "$exec_path" ] || { echo "Run 'make venv' first: $exec_path is missing." >&2; exit 1; }
target="${XDG_DATA_HOME:-$HOME/.local/share}/applications"
mkdir -p "$target"
sed -e "s|@EXEC@|$exec_path|" -e "s|@ICON@|$here/resources/icons/gallery-app.svg|" \
  "$here/packaging/gallery-app.desktop.in" > "$target/gallery-app.desktop"
echo "Installed $target/gallery-app.desktop"
