"""Where the app keeps its data and models.

platformdirs gives each OS's usual folders; two environment variables override
them, for tests (which must never touch a real user's folders) and for portable use.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from gallery_app.core.errors import StoreUnwritable

APP_NAME = "gallery_app"
DATA_DIR_ENV = "GALLERY_APP_DATA_DIR"
MODELS_DIR_ENV = "GALLERY_APP_MODELS_DIR"
DATABASE_FILENAME = "gallery.db"
#: The way out when the data folder cannot be used, for error messages.
NEW_DATA_FOLDER = f"or start with a new data folder: {DATA_DIR_ENV}=/path/to/new/folder"


def _from_env(name: str) -> Path | None:
    value = os.environ.get(name, "").strip()
    return Path(value).expanduser() if value else None


def make_data_folder(path: Path) -> Path:
    """Create ``path`` (a folder of app data) if needed; ``StoreUnwritable`` when that is not allowed."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreUnwritable(f"The data folder {path} cannot be created ({exc.strerror}). Nothing was changed.",
                              hint=f"Choose a folder you can write to, {NEW_DATA_FOLDER}.") from exc
    return path


def data_dir(create: bool = True) -> Path:
    """The database, thumbnails and settings live here."""
    path = _from_env(DATA_DIR_ENV) or Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))
    return make_data_folder(path) if create else path


def models_dir(create: bool = True) -> Path:
    """Model files the person downloaded or put there themselves."""
    path = _from_env(MODELS_DIR_ENV) or Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)) / "models"
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


def database_path() -> Path:
    return data_dir() / DATABASE_FILENAME


def thumbnails_dir() -> Path:
    return make_data_folder(data_dir() / "thumbnails")


def library_dir(kind: str) -> Path:
    """Where the app keeps copies of photos it was handed: ``uploads`` and ``captures``."""
    return make_data_folder(data_dir() / "photos" / kind)
