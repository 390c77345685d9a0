"""Two writers at once: the second waits its turn, and one export imported twice at once is one chat."""

from __future__ import annotations

import threading

import pytest

from gallery_app.core.chat.importer import import_chat
from gallery_app.core.errors import StoreError
from gallery_app.core.store import atomic, connect, open_store
from tests.chat_helpers import DEMO_CHAT, HashEmbedder


def counts(conn) -> tuple[int, ...]:
    return tuple(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                 for table in ("chats", "messages", "chunks", "chunk_windows", "vec_windows_test_hash_words"))


class WaitSignal:
    """A busy handler that says when its connection starts waiting for the write lock."""

    def __init__(self):
        self.waiting = threading.Event()

    def __call__(self, tries: int) -> bool:
        self.waiting.set()
        threading.Event().wait(0.01)
        return tries < 2000  # about 20 s, then SQLite gives up


def hold_write_lock(db_path):
    holder = connect(db_path)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO app_state(key, value) VALUES ('holder', 'was here')")
    return holder


def run_in_thread(target, *args, **kwargs):
    outcome: dict[str, object] = {}

    def run():
        try:
            outcome["result"] = target(*args, **kwargs)
        except BaseException as exc:  # handed to the test thread
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def run_while_locked(db_path, conn, target, *args):
    """``target(*args)`` in a thread while another connection holds the write lock, released once ``conn`` waits."""
    holder = hold_write_lock(db_path)
    signal = WaitSignal()
    conn.set_busy_handler(signal)
    thread, outcome = run_in_thread(target, *args)
    assert signal.waiting.wait(20), outcome.get("error")
    holder.execute("COMMIT")
    thread.join(60)
    assert "error" not in outcome, outcome["error"]
    return outcome["result"]


def test_a_writer_that_reads_first_waits_for_the_lock_instead_of_failing(db_path):
    """Before: `database is locked` at once: a read turning into a write never calls the busy handler."""
    open_store(db_path).close()
    writer = connect(db_path)

    def read_then_write():
        with atomic(writer):
            seen = writer.execute("SELECT count(*) FROM app_state").fetchone()[0]
            writer.execute("INSERT INTO app_state(key, value) VALUES ('writer', ?)", (str(seen),))

    run_while_locked(db_path, writer, read_then_write)
    # It waited, so its read came after the holder's commit.
    assert dict(writer.execute("SELECT key, value FROM app_state")) == {"holder": "was here", "writer": "1"}


def test_an_import_waits_for_another_writer(db_path):
    open_store(db_path).close()
    conn = open_store(db_path)
    summary = run_while_locked(db_path, conn, import_chat, conn, DEMO_CHAT, HashEmbedder())
    assert summary.messages_added == 432
    assert counts(conn)[:2] == (1, 432)


def test_a_writer_kept_waiting_too_long_gets_a_message_and_changes_nothing(db_path):
    open_store(db_path).close()
    holder = hold_write_lock(db_path)
    writer = connect(db_path, busy_timeout_ms=50)
    with pytest.raises(StoreError) as caught:
        with atomic(writer, wait_s=0.2):
            writer.execute("INSERT INTO app_state(key, value) VALUES ('writer', 'x')")
    assert str(caught.value) == ("Another import is writing to the library; try again when it finishes. "
                                 "Nothing was changed.")
    assert not writer.in_transaction
    holder.execute("COMMIT")
    assert dict(writer.execute("SELECT key, value FROM app_state")) == {"holder": "was here"}


def test_nested_atomic_blocks_are_savepoints(store):
    with atomic(store):
        store.execute("INSERT INTO app_state VALUES ('outer', '1')")
        with pytest.raises(ZeroDivisionError):
            with atomic(store):
                store.execute("INSERT INTO app_state VALUES ('inner', '1')")
                1 / 0
        with atomic(store):
            store.execute("INSERT INTO app_state VALUES ('second inner', '1')")
    assert dict(store.execute("SELECT key, value FROM app_state")) == {"outer": "1", "second inner": "1"}
    with pytest.raises(ZeroDivisionError):
        with atomic(store):
            store.execute("INSERT INTO app_state VALUES ('lost', '1')")
            with atomic(store):
                store.execute("INSERT INTO app_state VALUES ('lost too', '1')")
            1 / 0
    assert not store.in_transaction
    assert set(dict(store.execute("SELECT key, value FROM app_state"))) == {"outer", "second inner"}


class PausedEmbedder(HashEmbedder):
    """Stops in its first token count (while the import cuts passages) until ``go`` is set."""

    def __init__(self):
        self.planning, self.go = threading.Event(), threading.Event()

    def count_tokens(self, text: str) -> int:
        self.planning.set()
        assert self.go.wait(30)
        return super().count_tokens(text)


def test_the_same_export_imported_twice_at_once_is_one_chat(db_path):
    """Before: two identical chats (the same-chat check ran long before the insert, outside its transaction)."""
    alone = open_store(db_path.with_name("alone.db"))
    import_chat(alone, DEMO_CHAT, HashEmbedder())
    late = PausedEmbedder()
    thread, outcome = run_in_thread(import_chat, open_store(db_path), DEMO_CHAT, late)
    assert late.planning.wait(30)  # the second import has looked for the chat, and found none yet
    first = import_chat(open_store(db_path), DEMO_CHAT, HashEmbedder())
    late.go.set()
    thread.join(60)
    assert "error" not in outcome, outcome["error"]
    second = outcome["result"]
    assert first.new_chat and not second.new_chat and second.chat_id == first.chat_id
    assert second.messages_added == 0
    conn = open_store(db_path)
    assert counts(conn) == counts(alone)
    assert conn.execute("SELECT count(DISTINCT message_key) FROM messages").fetchone()[0] == 432
