"""The first start loads the bundled demo chats and photos once, with or without a CLIP model."""

from __future__ import annotations

from gallery_app.core import resources
from gallery_app.core.chat.repository import list_chats
from gallery_app.core.demo import demo_loaded, load_demo_data
from gallery_app.core.photos.indexer import PhotoIndexer
from gallery_app.core.photos.chat_photos import chat_context, chats_with_photos
from gallery_app.core.photos.filters import PhotoFilter
from gallery_app.core.photos.library import count_photos, list_photos
from gallery_app.core.photos.photo_vectors import vector_rowids
from gallery_app.core.store import open_store


def test_demo_data_loads_once_and_photos_wait_for_clip(minilm, test_clip):
    conn = open_store()
    lines = load_demo_data(conn, minilm, None)
    assert len(list_chats(conn)) == len(resources.demo_chat_files()) and demo_loaded(conn)
    assert count_photos(conn) == len(resources.demo_photo_files())
    assert any("photos found" in line for line in lines)
    # The demo chat that sent two of the demo photos links them: nothing is copied twice.
    (cat_chat, title, sent) = chats_with_photos(conn)[0]
    assert (title, sent) == ("Cat sitting", 2)
    in_chat = list_photos(conn, where=PhotoFilter(chat_id=cat_chat))
    assert sorted(p.name for p in in_chat) == ["chelsea.png", "coffee.png"]
    coffee = next(p for p in in_chat if p.name == "coffee.png")
    assert chat_context(conn, [coffee.id])[coffee.id][0].describe() == (
        "Sent by Tom in “Cat sitting” on Fri 05 Jul 2024, 08:15 — “Espresso on your balcony before work, hope that's fine”")
    assert coffee.taken_at == "2024-07-05T08:15:40"  # no capture time in the file: the day the chat sent it
    assert load_demo_data(conn, minilm, None) == []  # once per database

    vision = test_clip[0]
    assert PhotoIndexer(conn, vision).embed_missing() == count_photos(conn)
    assert len(vector_rowids(conn, vision)) == count_photos(conn)
