"""The bundled demo data, loaded into a new gallery so a first start shows the app working.

Runs once per database (remembered in ``app_state``); photos are recorded even without a CLIP
model and embedded on a later start once one is available (``embed_missing``). ``prepare_demo`` is
what a start does; ``load_demo_data`` is its part that imports.
"""

from __future__ import annotations

from collections.abc import Callable

import apsw

from gallery_app.core import resources
from gallery_app.core.chat.importer import import_chat
from gallery_app.core.errors import ModelNotAvailable
from gallery_app.core.photos.indexer import PhotoIndexer
from gallery_app.core.store import atomic

DEMO_LOADED_KEY = "demo_data_loaded"


def demo_loaded(conn: apsw.Connection) -> bool:
    return conn.execute("SELECT 1 FROM app_state WHERE key = ?", (DEMO_LOADED_KEY,)).fetchone() is not None


def load_demo_data(conn: apsw.Connection, embedder, vision, *, progress: Callable[[int, int], None] | None = None,
                   cancel: Callable[[], bool] | None = None) -> list[str]:
    """Import the demo chats and photos unless done before; returns one summary line per part done."""
    if demo_loaded(conn):
        return []
    progress = progress or (lambda done, total: None)
    chats = resources.demo_chat_files()
    steps = len(chats) + 1
    lines = []
    for done, chat in enumerate(chats):
        if cancel is not None and cancel():
            return lines
        progress(done, steps)
        if embedder is not None:
            lines.append(import_chat(conn, chat, embedder, cancel=cancel, vision=vision).describe())
    # The demo chat "Cat sitting" sent two of these photos: the folder's files take the place of its copies.
    photos = resources.demo_photo_files()
    if photos:
        summary = PhotoIndexer(conn, vision, cancel=cancel).add_folder(photos[0].parent)
        if summary.cancelled:
            return lines
        lines.append(summary.describe())
    if embedder is None:
        return lines  # the chats come on a later start, once a text embedder is here
    with atomic(conn):
        conn.execute("INSERT OR REPLACE INTO app_state(key, value) VALUES (?, '1')", (DEMO_LOADED_KEY,))
    progress(steps, steps)
    return lines


def _unless_missing(load: Callable[[], object]):
    try:
        return load()
    except ModelNotAvailable:
        return None


def prepare_demo(conn: apsw.Connection, load_embedder: Callable[[], object], load_vision: Callable[[], object], *,
                 progress: Callable[[int, int], None] | None = None,
                 cancel: Callable[[], bool] | None = None) -> list[str]:
    """Load the demo data into a new gallery and embed photos recorded before CLIP was available.

    The models come as loaders because a model not on this computer yet is passed over here (its part
    of the demo comes on a later start), not an error for the caller. Returns one summary line per part done.
    """
    embedder = _unless_missing(load_embedder)
    vision = _unless_missing(load_vision)
    lines = load_demo_data(conn, embedder, vision, progress=progress, cancel=cancel)
    if vision is not None:
        embedded = PhotoIndexer(conn, vision, cancel=cancel).embed_missing()
        if embedded:
            lines.append(f"{embedded} photos are now searchable.")
    return lines
