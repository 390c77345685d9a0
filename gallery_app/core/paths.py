"""Where the app keeps its data and models, and every GALLERY_APP_* environment variable.

platformdirs gives each OS's usual folders; two environment variables override
them, for tests (which must never touch a real user's folders) and for portable use.
The app's other variables (bundled resources, the model hub, the vector cache's memory) are
read here too, so that one module says what the environment can change.
The window does not write variables to steer the core: it calls ``use_data_dir``.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from gallery_app.core.errors import StoreUnwritable

APP_NAME = "gallery_app"
DATA_DIR_ENV = "GALLERY_APP_DATA_DIR"
MODELS_DIR_ENV = "GALLERY_APP_MODELS_DIR"
#: The folder of demo chats, photos and icons, when a bundle keeps them elsewhere.
RESOURCES_DIR_ENV = "GALLERY_APP_RESOURCES_DIR"
#: Where models are downloaded from; tests (and mirrors) point it elsewhere.
HUB_ENDPOINT_ENV = "GALLERY_APP_HUB_ENDPOINT"
#: Megabytes the packed vector indexes may take together (core/store/fastsearch/cache.py).
VECTOR_CACHE_MB_ENV = "GALLERY_APP_VECTOR_CACHE_MB"
DATABASE_FILENAME = "gallery.db"
#: The way out when the data folder cannot be used, for error messages.
NEW_DATA_FOLDER = f"or start with a new data folder: {DATA_DIR_ENV}=/path/to/new/folder"


#: The data folder the running app chose (``use_data_dir``), and whether it wins over DATA_DIR_ENV.
_chosen_data_dir: Path | None = None
_chosen_over_environment = False


def _from_env(name: str) -> Path | None:
    value = os.environ.get(name, "").strip()
    return Path(value).expanduser() if value else None


def use_data_dir(path: Path | str, *, over_environment: bool = False) -> None:
    """Keep the data in ``path`` from now on (before anything opens the database).

    The settings' data folder gives way to DATA_DIR_ENV, which tests set; the self-test's throw-away
    folder does not (``over_environment``), so that it never touches the folder a variable names.
    """
    global _chosen_data_dir, _chosen_over_environment
    _chosen_data_dir, _chosen_over_environment = Path(path).expanduser(), over_environment


def data_dir_from_environment() -> Path | None:
    """The data folder DATA_DIR_ENV names, if it is set."""
    return _from_env(DATA_DIR_ENV)


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
    forced = _chosen_data_dir if _chosen_over_environment else None
    path = (forced or _from_env(DATA_DIR_ENV) or _chosen_data_dir
            or Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)))
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


def resources_dir_override() -> Path | None:
    """The resources folder RESOURCES_DIR_ENV names (a bundle's), if it is set."""
    value = os.environ.get(RESOURCES_DIR_ENV, "").strip()
    return Path(value) if value else None


def hub_endpoint_override() -> str | None:
    """The model hub HUB_ENDPOINT_ENV names (a test server, a mirror), if it is set."""
    return os.environ.get(HUB_ENDPOINT_ENV, "").strip() or None


def vector_cache_mb(default: float) -> float:
    """The vector cache's memory budget in MB from VECTOR_CACHE_MB_ENV; ``default`` when unset or not a number."""
    try:
        return float(os.environ.get(VECTOR_CACHE_MB_ENV, default))
    except ValueError:
        return default
