"""Closing a connection empties the write-ahead log with a statement, which lets other threads run.

apsw's ``close()`` copies the log into the database holding the GIL (every other thread, the window's
included, stops meanwhile: 20-30 ms for a 30 MB log; ``bench/store_close.py`` measures it side by side).
"""

from __future__ import annotations

import os

import apsw

from gallery_app.core.store import atomic, close_connection, connect, open_store


def write_a_big_log(conn) -> None:
    conn.execute("CREATE TABLE IF NOT EXISTS notes(body BLOB)")
    with atomic(conn):
        conn.executemany("INSERT INTO notes VALUES (?)", ((os.urandom(2000),) for _ in range(3000)))


def test_the_log_is_emptied_by_a_statement_before_the_connection_closes(tmp_path):
    """Before: with another connection open, close() left the 6 MB log for later, so the last close
    (on whichever thread) copied it all while holding the GIL."""
    path = tmp_path / "gallery.db"
    writer, other = open_store(path), open_store(path)
    write_a_big_log(writer)
    assert (tmp_path / "gallery.db-wal").stat().st_size > 5_000_000
    close_connection(writer)
    assert (tmp_path / "gallery.db-wal").stat().st_size == 0
    assert other.execute("SELECT count(*) FROM notes").fetchone()[0] == 3000
    close_connection(other)
    assert not (tmp_path / "gallery.db-wal").exists()


def test_a_reader_in_the_middle_of_a_read_is_not_waited_for(tmp_path):
    path = tmp_path / "gallery.db"
    writer, reader = open_store(path), open_store(path)
    write_a_big_log(writer)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM notes").fetchone()  # holds its snapshot of the log
    write_a_big_log(writer)
    close_connection(writer)  # busy timeout 0: the checkpoint stops where the reader is, at once
    assert reader.execute("SELECT count(*) FROM notes").fetchone()[0] == 3000
    reader.execute("COMMIT")
    close_connection(reader)
    check = apsw.Connection(str(path))
    assert check.execute("SELECT count(*) FROM notes").fetchone()[0] == 6000
    check.close()


def test_a_store_marked_damaged_is_closed_without_touching_it(tmp_path):
    conn = connect(tmp_path / "gallery.db")
    write_a_big_log(conn)
    conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)  # what a damaged store gets
    size = (tmp_path / "gallery.db-wal").stat().st_size
    close_connection(conn)
    assert (tmp_path / "gallery.db-wal").stat().st_size == size
