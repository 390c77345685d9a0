"""The first start loads the bundled demo chats and photos once, with or without a CLIP model."""

from __future__ import annotations

from gallery_app.core import resources
from gallery_app.core.chat.repository import list_chats
from gallery_app.core.demo import demo_loaded, load_demo_data
from gallery_app.core.photos.indexer import PhotoIndexer
from gallery_app.core.photos.library import count_photos
from gallery_app.core.photos.photo_vectors import vector_rowids
from gallery_app.core.store import open_store


def test_demo_data_loads_once_and_photos_wait_for_clip(minilm, test_clip):
    conn = open_store()
    lines = load_demo_data(conn, minilm, None)
    assert len(list_chats(conn)) == len(resources.demo_chat_files()) and demo_loaded(conn)
    assert count_photos(conn) == len(resources.demo_photo_files())
    assert any("photos found" in line for line in lines)
    assert load_demo_data(conn, minilm, None) == []  # once per database

    vision = test_clip[0]
    assert PhotoIndexer(conn, vision).embed_missing() == count_photos(conn)
    assert len(vector_rowids(conn, vision)) == count_photos(conn)
