"""Closing the last connection copies the write-ahead log into the database without freezing other threads."""

from __future__ import annotations

import os
import threading
import time

import apsw

from gallery_app.core.store import atomic, close_connection, connect


def longest_pause_of_another_thread(action) -> float:
    """The longest time a thread that wakes every millisecond went without running while ``action`` ran."""
    pauses, done = [], threading.Event()

    def tick():
        last = time.perf_counter()
        while not done.is_set():
            time.sleep(0.001)
            now = time.perf_counter()
            pauses.append(now - last)
            last = now

    ticker = threading.Thread(target=tick)
    ticker.start()
    try:
        action()
    finally:
        done.set()
        ticker.join()
    return max(pauses)


def store_with_a_big_log(path):
    conn = connect(path)
    conn.execute("CREATE TABLE notes(body BLOB)")
    with atomic(conn):
        conn.executemany("INSERT INTO notes VALUES (?)", ((os.urandom(2000),) for _ in range(15_000)))
    return conn


def test_closing_copies_the_log_while_other_threads_keep_running(tmp_path):
    """Before: apsw's close() copies a 30 MB log holding the GIL, and every other thread (the window's
    included) stops for as long as that takes."""
    plain = store_with_a_big_log(tmp_path / "plain.db")
    ours = store_with_a_big_log(tmp_path / "ours.db")
    plain_pause = longest_pause_of_another_thread(plain.close)
    our_pause = longest_pause_of_another_thread(lambda: close_connection(ours))
    assert our_pause < plain_pause / 2, (our_pause, plain_pause)
    assert not (tmp_path / "ours.db-wal").exists()  # the log went into the database, as a plain close does
    check = apsw.Connection(str(tmp_path / "ours.db"))
    assert check.execute("SELECT count(*) FROM notes").fetchone()[0] == 15_000
    check.close()
