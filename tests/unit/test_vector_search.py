"""vector_search.search(): the packed in-memory paths agree with sqlite-vec and stay in step with the file."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from gallery_app.core.errors import StoreError, VectorModelMismatch
from gallery_app.core.store import (
    atomic, connect, delete_vectors, ensure_vector_table, insert_vectors, knn, open_store, vectors,
)
from gallery_app.core.store.fastsearch import cache, loading
from gallery_app.core.store.vector_search import search
from gallery_app.core.store.vectors import table_version

MODEL = "test-model-a"
DIMS = 32
META = {"chat_id": "integer", "day": "text"}


def rows(n: int, dims: int = DIMS, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, dims)).astype(np.float32)


def meta(rowids) -> dict[str, list]:
    return {"chat_id": [r % 5 for r in rowids], "day": [f"2024-01-{r % 28 + 1:02d}" for r in rowids]}


@pytest.fixture(autouse=True)
def empty_cache():
    cache.release()
    yield
    cache.release()


@pytest.fixture
def filled(store):
    table = ensure_vector_table(store, "chunks", MODEL, DIMS, metadata=META)
    ids = list(range(1, 1501))
    insert_vectors(store, table, ids, rows(1500), model_key=MODEL, metadata=meta(ids))
    return store, table


def ids_of(hits) -> list[int]:
    return [hit.rowid for hit in hits]


def reference(vectors: np.ndarray, rowids: np.ndarray, query: np.ndarray, k: int) -> tuple[list[int], np.ndarray]:
    """Sorted brute force in float64: cosine distance, ties by position."""
    v, q = vectors.astype(np.float64), query.astype(np.float64)
    distance = 1.0 - (v @ q) / (np.linalg.norm(v, axis=1) * np.linalg.norm(q))
    order = np.argsort(distance, kind="stable")[:k]
    return rowids[order].tolist(), distance[order]


def test_packed_exact_equals_sorted_brute_force(filled):
    store, table = filled
    data = rows(1500)
    for seed in range(10):
        query = rows(1, seed=100 + seed)[0]
        hits = search(store, table, query, model_key=MODEL, k=25, method="exact")
        expected_ids, expected_distance = reference(data, np.arange(1, 1501), query, 25)
        assert ids_of(hits) == expected_ids
        np.testing.assert_allclose([h.distance for h in hits], expected_distance, atol=1e-6)
        assert ids_of(hits) == ids_of(knn(store, table, query, model_key=MODEL, k=25))
        assert hits[0].similarity == pytest.approx(1 - hits[0].distance)


def test_l2_table_matches_vec0(store):
    table = ensure_vector_table(store, "l2", MODEL, 8, metric="l2")
    insert_vectors(store, table, range(1, 301), rows(300, 8), model_key=MODEL)
    query = rows(1, 8, seed=9)[0]
    fast = search(store, table, query, model_key=MODEL, k=10, method="exact")
    slow = knn(store, table, query, model_key=MODEL, k=10)
    assert ids_of(fast) == ids_of(slow)
    np.testing.assert_allclose([h.distance for h in fast], [h.distance for h in slow], rtol=1e-5)


def test_inserts_and_deletes_through_this_process_patch_the_cached_index(filled, monkeypatch):
    store, table = filled
    query = rows(1, seed=7)[0]
    search(store, table, query, model_key=MODEL, k=5)
    reloads = []
    original = loading.read_table
    monkeypatch.setattr(cache, "read_table", lambda *a: reloads.append(1) or original(*a))

    closest = ids_of(search(store, table, query, model_key=MODEL, k=5))
    delete_vectors(store, table, closest[:2])
    assert ids_of(search(store, table, query, model_key=MODEL, k=3)) == closest[2:5]
    insert_vectors(store, table, [5000, 17], np.stack([query, -query]), model_key=MODEL, metadata=meta([5000, 17]))
    hits = search(store, table, query, model_key=MODEL, k=4)
    assert ids_of(hits) == [5000, *closest[2:5]]
    assert 17 not in ids_of(search(store, table, query, model_key=MODEL, k=100))  # replaced, not duplicated
    assert ids_of(hits) == ids_of(knn(store, table, query, model_key=MODEL, k=4))
    assert reloads == []
    assert cache.get_index(store, table).version == table_version(store, table)


def test_connecting_registers_the_cache_as_a_write_listener_once(db_path, monkeypatch):
    monkeypatch.setattr(vectors, "WRITE_LISTENERS", [])
    for _ in range(2):
        connect(db_path).close()
    assert vectors.WRITE_LISTENERS == [cache._on_write]


def test_rows_added_by_another_connection_are_seen(filled, db_path):
    store, table = filled
    query = rows(1, seed=8)[0]
    search(store, table, query, model_key=MODEL, k=5)
    other = open_store(db_path)
    try:
        insert_vectors(other, table, [9001], query[None, :], model_key=MODEL, metadata=meta([9001]))
        delete_vectors(other, table, [1, 2, 3])
    finally:
        other.close()
    hits = search(store, table, query, model_key=MODEL, k=5)
    assert hits[0].rowid == 9001
    assert ids_of(hits) == ids_of(knn(store, table, query, model_key=MODEL, k=5))
    assert not {1, 2, 3} & set(ids_of(search(store, table, query, model_key=MODEL, k=2000)))


def test_rows_added_by_another_process_are_seen(filled, db_path):
    store, table = filled
    query = np.full(DIMS, 0.5, np.float32)
    assert 7777 not in ids_of(search(store, table, query, model_key=MODEL, k=3))
    script = textwrap.dedent(f"""
        import numpy as np
        from gallery_app.core.store import get_vector_table, insert_vectors, open_store
        conn = open_store({str(db_path)!r})
        table = get_vector_table(conn, "chunks", {MODEL!r})
        insert_vectors(conn, table, [7777], np.full((1, {DIMS}), 0.5, np.float32), model_key={MODEL!r},
                       metadata={{"chat_id": [1], "day": ["2024-02-01"]}})
        conn.close()
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    hits = search(store, table, query, model_key=MODEL, k=3)
    assert hits[0].rowid == 7777 and hits[0].similarity == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("method", ["exact", "auto"])
@pytest.mark.parametrize("where", [
    {"chat_id": 2},
    {"chat_id": ("!=", 2)},
    {"day": (">=", "2024-01-20"), "chat_id": ("<", 3)},
    {"day": ("<=", "2024-01-02")},
    {"chat_id": (">", 4)},  # nothing passes
])
def test_filters_equal_the_vec0_path(filled, method, where):
    store, table = filled
    query = rows(1, seed=11)[0]
    expected = knn(store, table, query, model_key=MODEL, k=20, where=where)
    hits = search(store, table, query, model_key=MODEL, k=20, where=where, method=method)
    assert ids_of(hits) == ids_of(expected)


def test_threads_search_while_another_connection_writes(filled, db_path):
    import threading

    store, table = filled
    errors: list[BaseException] = []

    def reader(seed: int) -> None:
        conn = open_store(db_path)
        try:
            for i in range(15):
                hits = search(conn, table, rows(1, seed=seed * 100 + i)[0], model_key=MODEL, k=5)
                assert len(hits) == 5 and all(a.distance <= b.distance for a, b in zip(hits, hits[1:]))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            conn.close()

    threads = [threading.Thread(target=reader, args=(seed,)) for seed in range(3)]
    for thread in threads:
        thread.start()
    for i in range(5):
        new = [20_000 + i]
        insert_vectors(store, table, new, rows(1, seed=500 + i), model_key=MODEL, metadata=meta(new))
    for thread in threads:
        thread.join(timeout=30)
    assert not errors
    query = rows(1, seed=504)[0]
    expected = knn(store, table, query, model_key=MODEL, k=5)
    assert ids_of(search(store, table, query, model_key=MODEL, k=5)) == ids_of(expected)


def test_validation_matches_knn(filled):
    store, table = filled
    query = rows(1)[0]
    for call in (search, knn):
        with pytest.raises(VectorModelMismatch):
            call(store, table, query, model_key="test-model-b")
        with pytest.raises(VectorModelMismatch):
            call(store, table, query[:5], model_key=MODEL)
        with pytest.raises(VectorModelMismatch):
            call(store, table, query.astype(np.int32), model_key=MODEL)
        for bad_k in (0, -1, 5000, 2.5, True):
            with pytest.raises(StoreError, match="number of results"):
                call(store, table, query, model_key=MODEL, k=bad_k)
        with pytest.raises(StoreError, match="Cannot filter"):
            call(store, table, query, model_key=MODEL, where={"sender": "x"})
        with pytest.raises(StoreError, match="operator"):
            call(store, table, query, model_key=MODEL, where={"chat_id": ("; DROP TABLE x; --", 1)})
    with pytest.raises(StoreError, match="search method"):
        search(store, table, query, model_key=MODEL, method="faiss")


def test_inside_an_open_transaction_the_uncommitted_rows_count(filled):
    store, table = filled
    query = rows(1, seed=12)[0]
    search(store, table, query, model_key=MODEL)
    with atomic(store):
        insert_vectors(store, table, [4242], query[None, :], model_key=MODEL, metadata=meta([4242]))
        assert search(store, table, query, model_key=MODEL, k=1)[0].rowid == 4242
        store.execute("SELECT 1")
    assert search(store, table, query, model_key=MODEL, k=1)[0].rowid == 4242
    try:
        with atomic(store):
            delete_vectors(store, table, [4242])
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    assert search(store, table, query, model_key=MODEL, k=1)[0].rowid == 4242


def test_shadow_table_reader_equals_the_public_path(filled):
    store, table = filled
    delete_vectors(store, table, list(range(100, 400, 3)))
    fast = loading.read_table(store, table)
    blobs = store.execute(f"SELECT rowid, embedding FROM {table.name} ORDER BY rowid").fetchall()
    assert fast.rowids.tolist() == [r for r, _ in blobs]
    public = np.frombuffer(b"".join(b for _, b in blobs), np.float32).reshape(-1, DIMS)
    np.testing.assert_array_equal(fast.vectors, public)
    assert fast.metadata["chat_id"].tolist() == [r % 5 for r, _ in blobs]


def test_cache_is_released_when_its_connections_close(db_path):
    conn = open_store(db_path)
    table = ensure_vector_table(conn, "chunks", MODEL, DIMS)
    insert_vectors(conn, table, [1, 2], rows(2), model_key=MODEL)
    search(conn, table, rows(1)[0], model_key=MODEL)
    assert cache.cached_bytes() > 0
    conn.close()
    other = open_store(db_path.with_name("other.db"))
    try:
        other_table = ensure_vector_table(other, "chunks", MODEL, DIMS)
        insert_vectors(other, other_table, [1], rows(1), model_key=MODEL)
        search(other, other_table, rows(1)[0], model_key=MODEL)
        assert len(cache._entries) == 1
    finally:
        other.close()


def test_memory_budget_evicts_least_recently_used(tmp_path, monkeypatch):
    monkeypatch.setenv("GALLERY_APP_VECTOR_CACHE_MB", "0.05")  # about 50 kB: one 300 x 32 index fits
    conns = [open_store(tmp_path / f"{i}.db") for i in range(2)]
    try:
        for conn in conns:
            table = ensure_vector_table(conn, "chunks", MODEL, DIMS)
            insert_vectors(conn, table, range(1, 301), rows(300), model_key=MODEL)
            assert len(search(conn, table, rows(1)[0], model_key=MODEL, k=3)) == 3
        assert len(cache._entries) == 1
    finally:
        for conn in conns:
            conn.close()


@pytest.mark.parametrize("where", [None, {"chat_id": 3}])
def test_rows_read_within_their_group_score_as_their_blended_vectors_would(filled, where):
    """``blended_with_groups`` gives, from the scores and the index's centroids, what each row's vector moved
    towards its group's mean and normalised again would score; and the index's rows are not changed."""
    from gallery_app.core.store.vector_search import blended_with_groups, similarities

    store, table = filled
    queries = rows(2, seed=7)
    rowids, scores, metadata = similarities(store, table, queries, model_key=MODEL, where=where, within="day")
    weight = 0.3
    found = blended_with_groups(scores, metadata, weight)

    ids = np.arange(1, 1501)
    unit = rows(1500)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    days = np.asarray(meta(ids)["day"])
    centroid = {day: unit[days == day].mean(axis=0) for day in set(days.tolist())}
    centroid = {day: c / np.linalg.norm(c) for day, c in centroid.items()}
    position = {rowid: i for i, rowid in enumerate(ids.tolist())}
    blended = np.stack([unit[position[r]] + weight * centroid[days[position[r]]] for r in rowids.tolist()])
    blended /= np.linalg.norm(blended, axis=1, keepdims=True)
    expected = blended @ (queries / np.linalg.norm(queries, axis=1, keepdims=True)).T
    np.testing.assert_allclose(found, expected, atol=1e-5)
    assert not np.allclose(found, scores)
    _, plain, _ = similarities(store, table, queries, model_key=MODEL, where=where)
    np.testing.assert_allclose(plain, scores)


def test_a_row_alone_in_its_group_keeps_its_score(store):
    from gallery_app.core.store.vector_search import blended_with_groups, similarities

    table = ensure_vector_table(store, "chunks", MODEL, DIMS, metadata=META)
    insert_vectors(store, table, [1, 2, 3], rows(3), model_key=MODEL,
                   metadata={"chat_id": [1, 1, 1], "day": ["2024-01-01", "2024-01-01", "2024-01-02"]})
    rowids, scores, metadata = similarities(store, table, rows(1, seed=3), model_key=MODEL, within="day")
    blended = blended_with_groups(scores, metadata, 0.5)
    alone = rowids.tolist().index(3)
    np.testing.assert_allclose(blended[alone], scores[alone], atol=1e-6)
    assert not np.allclose(np.delete(blended, alone, axis=0), np.delete(scores, alone, axis=0))
