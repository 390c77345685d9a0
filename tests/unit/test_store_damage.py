"""A damaged, foreign or unwritable database: a message for a person, and the file left exactly as it was."""

from __future__ import annotations

import apsw
import pytest

from gallery_app.core import paths
from gallery_app.core.chat.importer import import_chat
from gallery_app.core.chat.repository import list_chats
from gallery_app.core.errors import StoreDamaged, StoreUnwritable
from gallery_app.core.store import connect, open_store
from gallery_app.core.store.connection import check_integrity, store_failure
from tests.chat_helpers import DEMO_CHAT, HashEmbedder
from tests.store_damage import fingerprint, garble_table, truncate, with_unfinished_log


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    """A real store with the demo chat in it, closed; tests damage copies of it."""
    db = tmp_path_factory.mktemp("healthy") / paths.DATABASE_FILENAME
    conn = open_store(db)
    import_chat(conn, DEMO_CHAT, HashEmbedder())
    conn.close()
    return db.read_bytes()


@pytest.fixture
def data(app_dirs, healthy):
    folder = paths.data_dir()
    (folder / paths.DATABASE_FILENAME).write_bytes(healthy)
    return folder


def assert_says_what_to_do(error, db):
    text = str(error)
    assert str(db) in text and "Nothing was changed" in text
    assert "GALLERY_APP_DATA_DIR=" in text  # the way out: a new data folder


@pytest.mark.parametrize("damage", ["cut in half", "cut inside the header", "not a database"])
def test_a_truncated_or_foreign_file_is_refused_and_left_as_it_is(data, healthy, damage):
    """Before: apsw.CorruptError (a traceback) from every command."""
    db = data / paths.DATABASE_FILENAME
    if damage == "cut in half":
        truncate(db, len(healthy) // 2)
    elif damage == "cut inside the header":
        truncate(db, 60)
    else:
        db.write_bytes(b"holiday plans, not a database\n" * 50)
    before = fingerprint(data)
    with pytest.raises(StoreDamaged) as refused:
        open_store()
    assert_says_what_to_do(refused.value, db)
    assert fingerprint(data) == before


def test_an_sqlite_file_of_another_program_is_not_migrated(data):
    """Before: the app switched it to WAL (rewriting its header) and added its own tables to it."""
    db = data / paths.DATABASE_FILENAME
    db.unlink()
    other = apsw.Connection(str(db))
    other.execute("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine')")
    other.close()
    before = fingerprint(data)
    with pytest.raises(StoreDamaged, match="not one gallery_app made"):
        open_store()
    assert fingerprint(data) == before


def test_a_damaged_page_is_named_when_read_and_found_by_the_integrity_check(data):
    """Before: apsw.CorruptError when listing chats, and doctor found nothing wrong."""
    db = data / paths.DATABASE_FILENAME
    page = garble_table(db, "messages")
    before = fingerprint(data)
    conn = open_store()  # the first pages are whole: the damage shows when the messages are read
    with pytest.raises(apsw.CorruptError) as raw:
        list_chats(conn)
    failure = store_failure(raw.value, db)
    assert isinstance(failure, StoreDamaged)
    assert_says_what_to_do(failure, db)
    with pytest.raises(StoreDamaged, match=f"page {page}") as checked:
        check_integrity(conn, db)
    assert_says_what_to_do(checked.value, db)
    conn.close()
    assert fingerprint(data) == before


@pytest.mark.parametrize("table", ["messages", "chats"])
def test_an_import_into_a_library_with_a_damaged_page_is_refused_before_it_writes(data, tmp_path, table):
    """Before: `chat list` said the library was damaged, and a full `chat import` of another chat went on writing."""
    from tests.small_chats import LIGHTHOUSE  # another chat than the one in the library
    from tests.text_embedders import write_chat

    db = data / paths.DATABASE_FILENAME
    garble_table(db, table)
    before = fingerprint(data)
    conn = open_store()
    with pytest.raises(StoreDamaged, match="is damaged") as refused:
        import_chat(conn, write_chat(tmp_path / "lighthouse_trip", LIGHTHOUSE), HashEmbedder())
    assert_says_what_to_do(refused.value, db)
    conn.close()
    assert fingerprint(data) == before


def test_a_healthy_store_passes_the_integrity_check(data):
    conn = open_store()
    check_integrity(conn, data / paths.DATABASE_FILENAME)
    conn.close()


def test_a_damaged_file_keeps_its_write_ahead_log(data, tmp_path):
    """Before: closing copied the log into the damaged file and deleted the log."""
    crashed = with_unfinished_log(data / paths.DATABASE_FILENAME, tmp_path / "crashed")
    garble_table(crashed, "messages")
    before = fingerprint(crashed.parent)
    assert set(before) == {"gallery.db", "gallery.db-wal"}
    conn = open_store(crashed)
    with pytest.raises(apsw.CorruptError) as raw:
        list_chats(conn)
    assert isinstance(store_failure(raw.value, crashed), StoreDamaged)
    conn.close()
    assert fingerprint(crashed.parent) == before


def test_a_data_folder_that_cannot_be_made_is_named(tmp_path, monkeypatch):
    """Before: NotADirectoryError / PermissionError traceback. (A file in the way stops root too.)"""
    blocker = tmp_path / "a file"
    blocker.write_text("in the way")
    monkeypatch.setenv(paths.DATA_DIR_ENV, str(blocker / "data"))
    with pytest.raises(StoreUnwritable, match="cannot be created") as refused:
        paths.database_path()
    assert str(blocker / "data") in str(refused.value) and "GALLERY_APP_DATA_DIR=" in str(refused.value)
    with pytest.raises(StoreUnwritable, match="cannot be created"):
        connect(blocker / "elsewhere" / "gallery.db")


def test_a_database_path_that_is_a_folder_is_named(app_dirs):
    """Before: "could not be opened: unable to open database file"."""
    (paths.data_dir() / paths.DATABASE_FILENAME).mkdir()
    with pytest.raises(StoreUnwritable, match="is a folder, not a file"):
        open_store()


def test_a_full_disk_mid_import_is_said_plainly_and_the_library_is_as_it_was(tmp_path, monkeypatch, capsys):
    """SQLite's page limit gives the same "database or disk is full" a full disk gives (seen on an 8 MB tmpfs)."""
    from gallery_app.cli import main
    from gallery_app.core import store as store_package

    conn = open_store()
    before = (conn.execute("SELECT count(*) FROM messages").fetchone()[0], len(list_chats(conn)))
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.close()
    real_open = store_package.open_store

    def nearly_full(*args, **kwargs):
        opened = real_open(*args, **kwargs)
        opened.execute(f"PRAGMA max_page_count = {pages + 2}")  # room for almost nothing more
        return opened

    monkeypatch.setattr(store_package, "open_store", nearly_full)
    code = main(["chat", "import", str(DEMO_CHAT), "--embedder", "all-minilm-l6-v2-int8"])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert "is full" in err and "as it was before" in err and "Free some space" in err, err
    with pytest.raises(apsw.Error, match="full") as full:
        conn = nearly_full()
        try:
            import_chat(conn, DEMO_CHAT, HashEmbedder())
        finally:
            conn.close()
    assert "is full" in str(store_failure(full.value, paths.database_path()))
    conn = open_store()
    assert (conn.execute("SELECT count(*) FROM messages").fetchone()[0], len(list_chats(conn))) == before
    conn.close()
