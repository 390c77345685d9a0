"""What a start does with the demo data: imports it once, passing over a model that is not here yet."""

from __future__ import annotations

from gallery_app.core import resources
from gallery_app.core.chat.repository import list_chats
from gallery_app.core.demo import demo_loaded, prepare_demo
from gallery_app.core.errors import ModelNotAvailable
from gallery_app.core.photos.library import count_photos
from tests.chat_helpers import HashEmbedder


def not_here_yet():
    raise ModelNotAvailable("The clip-vision model is not on this computer yet.")


def test_the_demo_is_prepared_once_and_photos_wait_for_a_missing_clip_model(store):
    steps = []
    lines = prepare_demo(store, HashEmbedder, not_here_yet, progress=lambda *step: steps.append(step))
    assert len(list_chats(store)) == len(resources.demo_chat_files()) and demo_loaded(store)
    assert count_photos(store) == len(resources.demo_photo_files())
    assert lines and steps[-1][0] == steps[-1][1]
    assert prepare_demo(store, HashEmbedder, not_here_yet) == []


def test_without_a_text_embedder_the_chats_wait_for_a_later_start(store):
    prepare_demo(store, not_here_yet, not_here_yet)
    assert list_chats(store) == [] and not demo_loaded(store)
    assert count_photos(store) == len(resources.demo_photo_files())
