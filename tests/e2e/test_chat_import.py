"""Importing WhatsApp exports into the store with a real embedder."""

from __future__ import annotations

import zipfile

import pytest

from gallery_app.core.chat.export_file import ChatFileError
from gallery_app.core.chat.importer import import_chat, missing_vectors, reindex
from gallery_app.core.chat.repository import list_chats
from gallery_app.core.errors import Cancelled
from gallery_app.core.store import open_store
from tests.chat_helpers import DEMO_CHAT

pytestmark = pytest.mark.e2e


@pytest.fixture
def store(tmp_path):
    conn = open_store(tmp_path / "gallery.db")
    yield conn
    conn.close()


def counts(conn) -> tuple[int, int, int]:
    return tuple(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                 for table in ("messages", "chunks", "chunk_windows"))


def test_import_summary_tells_what_happened(store, minilm):
    stages = []
    summary = import_chat(store, DEMO_CHAT, minilm, progress=lambda stage, done, total: stages.append(stage))
    assert summary.new_chat and summary.messages_added == summary.messages_in_file == 432
    assert summary.participants == ["Maya", "Daniel"]
    assert summary.first.date().isoformat() == "2024-04-03" and summary.last.date().isoformat() == "2024-07-10"
    assert summary.attachments == 1 and summary.media_placeholders == 10 and summary.skipped_lines == 0
    assert "Imported “Weekend away”: 432 messages" in summary.describe()
    assert stages[0] == "parsed" and "embedded" in stages and stages[-1] == "stored"
    (chat,) = list_chats(store)
    assert chat.participants == ["Maya", "Daniel"] and chat.message_count == 431  # the encryption notice is not a message


def test_every_passage_line_keeps_its_sender(store, minilm):
    import_chat(store, DEMO_CHAT, minilm)
    for (text,) in store.execute("SELECT text FROM chunks"):
        assert all(line.split(": ", 1)[0] in ("Maya", "Daniel") for line in text.split("\n")), text
    for (day, first, last) in store.execute(
            "SELECT c.day, min(m.ts), max(m.ts) FROM chunks c JOIN messages m ON m.id BETWEEN c.first_message_id "
            "AND c.last_message_id GROUP BY c.id"):
        assert first[:10] == last[:10] == day  # a passage never spans two days


def test_reimporting_adds_nothing_and_a_longer_export_adds_only_new_messages(store, minilm, tmp_path):
    lines = DEMO_CHAT.read_bytes().split(b"\r\n")
    shorter = tmp_path / "_chat.txt"
    shorter.write_bytes(b"\r\n".join(lines[:300]))
    first = import_chat(store, shorter, minilm)
    before = counts(store)
    again = import_chat(store, shorter, minilm)
    assert again.messages_added == 0 and not again.new_chat and counts(store) == before
    assert "already up to date" in again.describe()
    longer = import_chat(store, DEMO_CHAT, minilm)
    assert longer.chat_id == first.chat_id and not longer.new_chat
    assert longer.messages_added == 432 - first.messages_in_file
    assert len(list_chats(store)) == 1
    assert store.execute("SELECT count(*) FROM messages").fetchone()[0] == 432
    # The day cut in two by the shorter export is one passage series again, with no duplicates.
    ids = [i for (ids,) in store.execute("SELECT message_ids FROM chunks") for i in __import__("json").loads(ids)]
    assert len(ids) == len(set(ids))
    assert missing_vectors(store, minilm) == 0


def test_cancel_leaves_the_store_as_it_was(store, minilm):
    with pytest.raises(Cancelled):
        import_chat(store, DEMO_CHAT, minilm, cancel=lambda: True)
    assert counts(store) == (0, 0, 0) and list_chats(store) == []


def test_zip_export_is_imported_without_extracting(store, minilm, tmp_path):
    archive = tmp_path / "WhatsApp Chat - Weekend away.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.write(DEMO_CHAT, "_chat.txt")
        z.writestr("00000031-PHOTO-2024-06-14-10-22-05.jpg", b"\xff\xd8\xff not really")
    summary = import_chat(store, archive, minilm)
    assert summary.title == "Weekend away" and summary.messages_added == 432


def test_a_wrong_file_gets_a_clear_error(store, minilm, tmp_path):
    photo = tmp_path / "holiday.jpg"
    photo.write_bytes(b"\xff\xd8\xff\xe0")
    with pytest.raises(ChatFileError, match="not a WhatsApp export"):
        import_chat(store, photo, minilm)
    assert counts(store) == (0, 0, 0)


def test_switching_embedder_needs_a_reindex(store, minilm, e5):
    import_chat(store, DEMO_CHAT, minilm)
    windows = counts(store)[2]
    assert missing_vectors(store, e5) == windows
    assert reindex(store, e5) == windows
    assert missing_vectors(store, e5) == 0 and missing_vectors(store, minilm) == 0
