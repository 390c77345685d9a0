"""``search()``: the k nearest rows of a vector table, through the fastest path that keeps recall.

Same arguments, checks and results as ``vectors.knn`` (sqlite-vec, the store of record), plus
``method``: ``"vec0"`` asks sqlite-vec; ``"exact"``, ``"int8"`` and ``"binary"`` search the packed
in-memory copy of the table (``fastsearch``); ``"auto"`` (the default) picks:

* tables under ``AUTO_EXACT_BELOW`` rows: exact packed float32 (a few ms at most, recall 1);
* larger tables: the method ``PackedIndex.calibrate`` measured fastest among those whose shortlist
  reaches recall@10 ≥ 0.995 on sampled rows (exact always qualifies), measured once per index;
* inside an open transaction on ``conn``: vec0, which sees that transaction's uncommitted rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import apsw
import numpy as np

from gallery_app.core.errors import StoreError
from gallery_app.core.store.fastsearch import METHODS, PackedIndex, cache
from gallery_app.core.store.vectors import (
    Neighbor,
    VectorTable,
    checked_vectors,
    knn,
    parse_filters,
    similarity_from_distance,
    validate_k,
)

SEARCH_METHODS = ("auto", "vec0", *METHODS)
#: Below this many rows (of the table, or passing the filters) auto searches exactly.
AUTO_EXACT_BELOW = 50_000


def calibrated(index: PackedIndex, keep: str | None = None) -> PackedIndex:
    """``index`` with its shortlists and fastest method measured (once; other threads wait for it)."""
    with index.calibration_lock:
        if index.calibration is None:
            fastest = index.calibrate().method
            index.drop_quantised(keep or fastest)
    return index


def choose_method(index: PackedIndex, rows: int) -> str:
    """Exact for small tables or selections; else the calibrated method (calibrating on first use)."""
    if rows < AUTO_EXACT_BELOW:
        return "exact"
    return calibrated(index).calibration.method


def search(conn: apsw.Connection, table: VectorTable, query: np.ndarray, *, model_key: str, k: int = 10,
           where: Mapping[str, Any] | None = None, method: str = "auto") -> list[Neighbor]:
    """The ``k`` nearest rows to ``query``, closest first, with ``similarity = 1 - cosine distance``."""
    if method not in SEARCH_METHODS:
        raise StoreError(f"Unknown vector search method {method!r}; use one of {', '.join(SEARCH_METHODS)}.")
    k = validate_k(k)
    vector = checked_vectors(table, model_key, query, single=True)
    filters = parse_filters(table, where)
    if method == "vec0" or conn.in_transaction:
        return knn(conn, table, vector, model_key=model_key, k=k, where=where)
    index = cache.get_index(conn, table)
    if method == "auto":
        selected = index.selection(filters)
        rows = len(index) if selected is None else len(selected)
        method = choose_method(index, rows)
    elif method in ("int8", "binary"):
        calibrated(index, keep=method)  # a forced quantised method still gets a shortlist that keeps recall
    rowids, distances = index.search(vector, k, filters, method=method)
    return [Neighbor(int(r), float(d), similarity_from_distance(float(d), table.metric))
            for r, d in zip(rowids, distances)]


def similarities(conn: apsw.Connection, table: VectorTable, queries: np.ndarray, *, model_key: str,
                 where: Mapping[str, Any] | None = None) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Every row's cosine similarity to each query: ``(rowids, similarities[rows, queries], metadata)``.

    For rankers that aggregate rows into groups (a chat passage is as good as its best window) and
    weigh metadata (the day) against similarity: a top-k list would cut groups off arbitrarily.
    Reads the committed table (the packed copy), so call it outside a write transaction.
    """
    if table.metric != "cosine":
        raise StoreError(f"{table.name} is not a cosine table.")
    matrix = checked_vectors(table, model_key, np.atleast_2d(queries), single=False)
    filters = parse_filters(table, where)
    index = cache.get_index(conn, table)
    positions = index.selection(filters)
    if positions is None:
        vectors, factor, rowids = index.vectors, index.row_factor, index.rowids
        metadata = dict(index.metadata)
    else:
        vectors, factor, rowids = index.vectors[positions], index.row_factor[positions], index.rowids[positions]
        metadata = {name: values[positions] for name, values in index.metadata.items()}
    norms = np.linalg.norm(matrix, axis=1)
    scores = (vectors @ matrix.T) * factor[:, None] / np.maximum(norms, 1e-12)[None, :]
    return rowids, scores, metadata
