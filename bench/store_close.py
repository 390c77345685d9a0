"""How long other threads stop while a connection with a big write-ahead log closes: apsw's close()
against store.close_connection(), side by side in one run.

    .venv/bin/python bench/store_close.py
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from pathlib import Path

from gallery_app.core.store import atomic, close_connection, connect


def longest_pause_of_another_thread(action) -> float:
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


def store_with_a_big_log(path: Path, rows: int = 15_000):
    conn = connect(path)
    conn.execute("CREATE TABLE notes(body BLOB)")
    with atomic(conn):
        conn.executemany("INSERT INTO notes VALUES (?)", ((os.urandom(2000),) for _ in range(rows)))
    return conn


def main(repeats: int = 5) -> None:
    folder = Path(tempfile.mkdtemp(prefix="store-close-"))
    plain, ours = [], []
    for i in range(repeats):
        conn = store_with_a_big_log(folder / f"plain{i}.db")
        plain.append(longest_pause_of_another_thread(conn.close))
        conn = store_with_a_big_log(folder / f"ours{i}.db")
        ours.append(longest_pause_of_another_thread(lambda conn=conn: close_connection(conn)))
    median = lambda values: sorted(values)[len(values) // 2]  # noqa: E731
    print(f"30 MB log; longest pause of another thread, median of {repeats}: "
          f"close() {1000 * median(plain):.1f} ms, close_connection() {1000 * median(ours):.1f} ms "
          f"(ratio {median(plain) / median(ours):.1f}x)")


if __name__ == "__main__":
    main()
