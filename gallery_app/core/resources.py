"""The files that ship with the app: demo chats and photos, icons, the desktop entry template."""

from __future__ import annotations

from pathlib import Path

from gallery_app.core import paths


def resources_dir() -> Path:
    """``resources/`` beside the package in a checkout or editable install; overridable for bundles."""
    return paths.resources_dir_override() or Path(__file__).resolve().parents[2] / "resources"


def demo_chat_files() -> list[Path]:
    """Every bundled demo WhatsApp export (``*.txt`` or ``*.zip``), sorted by name."""
    root = resources_dir() / "demo" / "chats"
    if not root.is_dir():
        return []
    from gallery_app.core.chat.export_file import is_chat_export

    return sorted(p for p in root.rglob("*") if is_chat_export(p) and p.is_file())


def demo_photo_files() -> list[Path]:
    root = resources_dir() / "demo" / "photos"
    if not root.is_dir():
        return []
    from gallery_app.core.photos.preparing import is_photo_file  # the one list of photo file types

    return sorted(p for p in root.iterdir() if is_photo_file(p))
