"""The one-file store: reopening, migrations, model-bound vector tables, KNN."""

from __future__ import annotations

import apsw
import numpy as np
import pytest

from gallery_app.core.errors import StoreError, VectorModelMismatch
from gallery_app.core.store import (
    MAX_K, atomic, connect, count_vectors, delete_vectors, ensure_vector_table, get_vector_table,
    insert_vectors, knn, list_vector_tables, open_store,
)
from gallery_app.core.store.migrations import MIGRATIONS, applied_migrations, migrate

MODEL = "test-model-a"
OTHER_MODEL = "test-model-b"


def unit_rows(n: int, dims: int, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, dims)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_connection_has_wal_foreign_keys_and_sqlite_vec(store):
    assert store.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert store.execute("SELECT vec_version()").fetchone()[0].startswith("v")


def test_reopening_keeps_vectors_and_registry(db_path):
    conn = open_store(db_path)
    table = ensure_vector_table(conn, "chunks", MODEL, 8, metadata={"chat_id": "integer"})
    insert_vectors(conn, table, [1, 2], unit_rows(2, 8), model_key=MODEL, metadata={"chat_id": [7, 7]})
    conn.close()

    again = open_store(db_path)
    table = get_vector_table(again, "chunks", MODEL)
    assert table is not None and table.dims == 8 and table.metric == "cosine"
    assert count_vectors(again, table) == 2
    assert [t.name for t in list_vector_tables(again)] == ["vec_chunks_test_model_a"]


def test_migrations_are_recorded_and_idempotent(db_path):
    conn = connect(db_path)
    assert migrate(conn) == [name for name, _ in MIGRATIONS]
    assert migrate(conn) == []
    conn.close()
    conn = connect(db_path)
    assert migrate(conn) == []
    assert applied_migrations(conn) == [name for name, _ in MIGRATIONS]


def test_failing_migration_leaves_nothing_half_applied(db_path):
    conn = connect(db_path)

    def broken(c):
        c.execute("CREATE TABLE half_done (x)")
        c.execute("THIS IS NOT SQL")

    with pytest.raises(StoreError, match="003_broken"):
        migrate(conn, MIGRATIONS + [("003_broken", broken)])
    assert "003_broken" not in applied_migrations(conn)
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'half_done'").fetchone()[0] == 0


def test_database_from_a_newer_version_is_refused(db_path):
    conn = open_store(db_path)
    conn.execute("INSERT INTO schema_migrations(name) VALUES ('999_from_the_future')")
    with pytest.raises(StoreError, match="newer version"):
        migrate(conn)


def test_a_file_that_is_not_a_database_gets_a_clear_error(tmp_path):
    bogus = tmp_path / "photo.jpg"
    bogus.write_bytes(b"\xff\xd8\xff" + b"not a database" * 100)
    with pytest.raises(StoreError, match="not a gallery_app database"):
        open_store(bogus)


def test_atomic_rolls_back_everything_on_error(store):
    table = ensure_vector_table(store, "chunks", MODEL, 4)
    with pytest.raises(RuntimeError):
        with atomic(store):
            insert_vectors(store, table, [1], unit_rows(1, 4), model_key=MODEL)
            store.execute("INSERT INTO app_state VALUES ('k', 'v')")
            raise RuntimeError("crash in the middle")
    assert count_vectors(store, table) == 0
    assert store.execute("SELECT count(*) FROM app_state").fetchone()[0] == 0


def test_vectors_from_another_model_are_refused(store):
    table = ensure_vector_table(store, "chunks", MODEL, 4)
    with pytest.raises(VectorModelMismatch, match=OTHER_MODEL):
        insert_vectors(store, table, [1], unit_rows(1, 4), model_key=OTHER_MODEL)
    insert_vectors(store, table, [1], unit_rows(1, 4), model_key=MODEL)
    with pytest.raises(VectorModelMismatch, match="cannot go into"):
        knn(store, table, unit_rows(1, 4)[0], model_key=OTHER_MODEL)


def test_vectors_of_the_wrong_size_are_refused(store):
    table = ensure_vector_table(store, "chunks", MODEL, 4)
    with pytest.raises(VectorModelMismatch, match="4-dimensional"):
        insert_vectors(store, table, [1], unit_rows(1, 5), model_key=MODEL)
    with pytest.raises(VectorModelMismatch, match="4-dimensional"):
        knn(store, table, np.ones(3, np.float32), model_key=MODEL)
    with pytest.raises(VectorModelMismatch, match="NaN"):
        insert_vectors(store, table, [1], np.full((1, 4), np.nan, np.float32), model_key=MODEL)


def test_same_model_asking_for_other_dimensions_is_refused(store):
    ensure_vector_table(store, "chunks", MODEL, 4)
    with pytest.raises(VectorModelMismatch, match="4 dimensions"):
        ensure_vector_table(store, "chunks", MODEL, 8)


def test_each_model_gets_its_own_table_even_at_equal_dimensions(store):
    a = ensure_vector_table(store, "chunks", MODEL, 4)
    b = ensure_vector_table(store, "chunks", OTHER_MODEL, 4)
    assert a.name != b.name
    insert_vectors(store, a, [1], unit_rows(1, 4, seed=1), model_key=MODEL)
    assert count_vectors(store, b) == 0


def test_knn_orders_by_cosine_and_reports_similarity(store):
    table = ensure_vector_table(store, "photos", MODEL, 3)
    rows = np.array([[1, 0, 0], [0.8, 0.6, 0], [0, 0, 1]], np.float32)
    insert_vectors(store, table, [10, 20, 30], rows, model_key=MODEL)
    hits = knn(store, table, np.array([1, 0, 0], np.float32), model_key=MODEL, k=3)
    assert [h.rowid for h in hits] == [10, 20, 30]
    assert [round(h.similarity, 4) for h in hits] == [1.0, 0.8, 0.0]
    for hit in hits:
        assert hit.similarity == pytest.approx(1 - hit.distance)


def test_knn_matches_numpy_on_random_data(store):
    vectors = unit_rows(500, 16, seed=3)
    table = ensure_vector_table(store, "chunks", MODEL, 16)
    insert_vectors(store, table, range(1, 501), vectors, model_key=MODEL)
    query = unit_rows(1, 16, seed=4)[0]
    expected = np.argsort(-(vectors @ query))[:10] + 1
    hits = knn(store, table, query, model_key=MODEL, k=10)
    assert [h.rowid for h in hits] == expected.tolist()
    assert hits[0].similarity == pytest.approx(float(vectors[expected[0] - 1] @ query), abs=1e-5)


def test_knn_metadata_filter(store):
    table = ensure_vector_table(store, "chunks", MODEL, 2, metadata={"chat_id": "integer", "day": "text"})
    rows = np.array([[1, 0], [1, 0.1], [1, 0.2], [0, 1]], np.float32)
    insert_vectors(store, table, [1, 2, 3, 4], rows, model_key=MODEL,
                   metadata={"chat_id": [1, 2, 2, 2], "day": ["2024-01-01", "2024-01-02", "2024-02-01", "2024-03-01"]})
    query = np.array([1, 0], np.float32)
    assert [h.rowid for h in knn(store, table, query, model_key=MODEL, k=4, where={"chat_id": 2})] == [2, 3, 4]
    in_january = {"chat_id": 2, "day": ("<", "2024-02-01")}
    assert [h.rowid for h in knn(store, table, query, model_key=MODEL, k=4, where=in_january)] == [2]
    with pytest.raises(StoreError, match="Cannot filter"):
        knn(store, table, query, model_key=MODEL, where={"sender": "x"})
    with pytest.raises(StoreError, match="operator"):
        knn(store, table, query, model_key=MODEL, where={"chat_id": ("; DROP TABLE x; --", 1)})


@pytest.mark.parametrize("bad_k", [0, -1, MAX_K + 1, 2.5, "10", None, True])
def test_k_is_validated(store, bad_k):
    table = ensure_vector_table(store, "chunks", MODEL, 2)
    with pytest.raises(StoreError, match="1 to 4096"):
        knn(store, table, np.array([1, 0], np.float32), model_key=MODEL, k=bad_k)


def test_k_at_the_sqlite_vec_cap_works(store):
    table = ensure_vector_table(store, "chunks", MODEL, 2)
    insert_vectors(store, table, [1], np.array([[1, 0]], np.float32), model_key=MODEL)
    assert len(knn(store, table, np.array([1, 0], np.float32), model_key=MODEL, k=MAX_K)) == 1


def test_reinserting_a_rowid_replaces_it_and_delete_removes_it(store):
    table = ensure_vector_table(store, "chunks", MODEL, 2)
    insert_vectors(store, table, [1], np.array([[1, 0]], np.float32), model_key=MODEL)
    insert_vectors(store, table, [1], np.array([[0, 1]], np.float32), model_key=MODEL)
    assert count_vectors(store, table) == 1
    assert knn(store, table, np.array([0, 1], np.float32), model_key=MODEL, k=1)[0].similarity == pytest.approx(1)
    delete_vectors(store, table, [1])
    assert count_vectors(store, table) == 0


def test_bad_table_names_and_metadata_are_refused(store):
    with pytest.raises(StoreError):
        ensure_vector_table(store, "chunks; DROP", MODEL, 2)
    with pytest.raises(StoreError):
        ensure_vector_table(store, "chunks", MODEL, 2, metadata={"Bad Name": "integer"})
    with pytest.raises(StoreError):
        ensure_vector_table(store, "chunks", MODEL, 2, metadata={"day": "blob"})
    with pytest.raises(StoreError):
        ensure_vector_table(store, "chunks", MODEL, 0)


def test_readonly_connection_cannot_write(db_path, store):
    reader = connect(db_path, readonly=True)
    with pytest.raises(apsw.ReadOnlyError):
        reader.execute("INSERT INTO app_state VALUES ('a', 'b')")


def test_two_connections_opening_a_new_database_at_once_both_succeed(tmp_path):
    """Before: both ran the migrations ("table … already exists"), or the switch to WAL said "locked"."""
    import threading

    from gallery_app.core.store import open_store

    for attempt in range(40):
        path = tmp_path / f"race-{attempt}.db"
        errors, barrier = [], threading.Barrier(3)

        def open_it():
            barrier.wait()
            try:
                open_store(path).close()
            except Exception as exc:  # noqa: BLE001 - the test reports whatever went wrong
                errors.append(exc)

        threads = [threading.Thread(target=open_it) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
