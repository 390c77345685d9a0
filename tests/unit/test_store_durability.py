"""The store under stress: a writer killed mid-transaction, and readers during writes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from gallery_app.core.store import connect, ensure_vector_table, insert_vectors, knn, open_store

MODEL = "durability-model"
DIMS = 64

# Runs in a child process: one committed batch, then a huge transaction that is never finished.
WRITER = textwrap.dedent(
    """
    import sys, numpy as np
    from gallery_app.core.store import open_store, ensure_vector_table, insert_vectors
    conn = open_store(sys.argv[1])
    table = ensure_vector_table(conn, "chunks", "durability-model", 64)
    rng = np.random.default_rng(0)
    insert_vectors(conn, table, range(1, 1001), rng.standard_normal((1000, 64)).astype("float32"),
                   model_key="durability-model")
    conn.execute("INSERT INTO app_state VALUES ('committed', 'yes')")
    print("committed", flush=True)
    with conn:
        conn.execute("INSERT INTO app_state VALUES ('half', 'written')")
        for start in range(1001, 10_000_000, 5000):
            insert_vectors(conn, table, range(start, start + 5000),
                           rng.standard_normal((5000, 64)).astype("float32"), model_key="durability-model")
            if start > 20_000:
                print("writing", flush=True)
    """
)


@pytest.mark.slow
def test_killed_writer_leaves_previous_contents(tmp_path):
    db = tmp_path / "gallery.db"
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(db)], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert child.stdout.readline().strip() == "committed"
        assert child.stdout.readline().strip() == "writing"  # deep inside the big transaction
        time.sleep(0.3)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL

    conn = open_store(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    table = ensure_vector_table(conn, "chunks", MODEL, DIMS)
    assert conn.execute(f"SELECT count(*) FROM {table.name}").fetchone()[0] == 1000
    # The table's change counter (vectors.table_version) counts the one committed insert, not the lost ones.
    assert dict(conn.execute("SELECT key, value FROM app_state")) == {
        "committed": "yes", "vector_table_version:vec_chunks_durability_model": "1"}
    assert len(knn(conn, table, np.ones(DIMS, np.float32), model_key=MODEL, k=5)) == 5


def test_reader_sees_whole_batches_while_a_writer_inserts(tmp_path):
    db = tmp_path / "gallery.db"
    writer = open_store(db)
    table = ensure_vector_table(writer, "chunks", MODEL, DIMS)
    writer.execute("CREATE TABLE chunk_text (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
    batch, batches = 200, 15
    rng = np.random.default_rng(1)
    seen: list[tuple[int, int]] = []
    failures: list[BaseException] = []
    done = threading.Event()

    def read_until_done() -> None:
        reader = connect(db)
        queries = np.random.default_rng(2)
        try:
            while not done.is_set():
                # One read transaction: both counts come from the same snapshot.
                with reader:
                    texts = reader.execute("SELECT count(*) FROM chunk_text").fetchone()[0]
                    vectors = reader.execute(f"SELECT count(*) FROM {table.name}").fetchone()[0]
                    if vectors:
                        knn(reader, table, queries.standard_normal(DIMS).astype(np.float32), model_key=MODEL, k=3)
                seen.append((texts, vectors))
        except BaseException as exc:  # reported to the test thread below
            failures.append(exc)
        finally:
            reader.close()

    thread = threading.Thread(target=read_until_done)
    thread.start()
    try:
        for b in range(batches):
            ids = list(range(b * batch + 1, (b + 1) * batch + 1))
            with writer:
                writer.executemany("INSERT INTO chunk_text VALUES (?, ?)", [(i, f"text {i}") for i in ids])
                insert_vectors(writer, table, ids, rng.standard_normal((batch, DIMS)).astype(np.float32),
                               model_key=MODEL)
            time.sleep(0.01)
    finally:
        done.set()
        thread.join(timeout=30)
    assert not thread.is_alive()
    assert not failures, failures
    assert len(seen) > 5
    for texts, vectors in seen:
        assert texts == vectors and texts % batch == 0, (texts, vectors)
    assert seen == sorted(seen)  # a reader never goes back in time
