"""One question, every source: a library holding the demo chat and a real notes folder, asked in one
conversation with the real offline models (multilingual e5, SmolLM2-135M), as the window and `chat ask` ask."""

from __future__ import annotations

import shutil

import pytest

from gallery_app.core.chat.evidence import match_lines
from gallery_app.core.chat.importer import import_chat
from gallery_app.core.chat.session import CHATS, NOTES, ChatSession
from gallery_app.core.models import catalog
from gallery_app.core.models.loading import open_chat_llm, open_text_embedder
from gallery_app.core.notes.indexer import index_folder
from gallery_app.core.store import open_store
from tests.chat_helpers import DEMO_CHAT

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.shared_fixtures]

NOTES_FILES = ("cheatsheets/ssh.txt", "cheatsheets/tar.txt", "Vault of Knowledge/03. Culture/Food and Drinks/Tea.md",
               "Vault of Knowledge/03. Culture/Food and Drinks/Coffee.md")


@pytest.fixture(scope="module")
def library(tmp_path_factory, shared_fixtures_module):
    embedder = open_text_embedder(None, threads=2)
    conn = open_store(tmp_path_factory.mktemp("library") / "gallery.db")
    import_chat(conn, DEMO_CHAT, embedder)
    folder = tmp_path_factory.mktemp("notes")
    for name in NOTES_FILES:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shared_fixtures_module / "notes_qa" / "folder" / name, folder / name)
    index_folder(conn, folder, embedder)
    yield conn, embedder
    conn.close()
    embedder.release()


@pytest.fixture(scope="module")
def shared_fixtures_module():
    from tests.conftest import require_shared_fixtures

    return require_shared_fixtures()


@pytest.fixture(scope="module")
def smollm():
    llm = open_chat_llm(catalog.SMOLLM2_135M.key, threads=2)
    yield llm
    llm.release()


def test_a_note_question_and_a_chat_question_in_one_conversation(library, smollm):
    conn, embedder = library
    session = ChatSession(conn, embedder, smollm)
    from_note = session.answer("Which tea brand does Starbucks serve?")
    top = from_note.retrieval.matches[0]
    assert top.is_note and top.note.relative_path.endswith("Tea.md") and top.chat_title == "Tea"
    assert "and 1 chat" in from_note.retrieval.describe() or "in 2 notes" in from_note.retrieval.describe() \
        or "note" in from_note.retrieval.describe()
    highlighted = [line.text for line in match_lines(conn, top) if line.focus]
    assert highlighted == ["Starbucks uses Tazo Tea brand."]
    assert "tazo" in from_note.text.lower(), from_note.text
    assert "[1] Tea, " in from_note.prompt.context  # the model reads where the passage is from
    from_chat = session.answer("What was the key safe code at the cottage?")
    top = from_chat.retrieval.matches[0]
    assert not top.is_note and top.chat_title == "Weekend away"
    assert "4418" in from_chat.text, from_chat.text
    assert len(session.conversation.recent) == 2


def test_sources_narrow_the_search(library):
    conn, embedder = library
    question = "Which ssh options open a local SOCKS proxy on a chosen port?"
    both = ChatSession(conn, embedder).retrieve(question)[1]
    assert both.matches[0].is_note and both.matches[0].note.relative_path == "cheatsheets/ssh.txt"
    lines = match_lines(conn, both.matches[0])
    assert [line.text for line in lines if line.focus] == ["# To create a SOCKS proxy on localhost and <port>:"]
    only_chats = ChatSession(conn, embedder, sources=frozenset({CHATS})).retrieve(question)[1]
    assert only_chats.matches and not any(m.is_note for m in only_chats.matches)
    only_notes = ChatSession(conn, embedder, sources=frozenset({NOTES})).retrieve(question)[1]
    assert only_notes.matches and all(m.is_note for m in only_notes.matches)
    assert only_notes.describe().startswith("Found 6 passages in ") and "chat" not in only_notes.describe()
