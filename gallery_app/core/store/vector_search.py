"""``search()``: the k nearest rows of a vector table, from the packed in-memory copy.

Same arguments, checks and results as ``vectors.knn`` (sqlite-vec, the store of record), plus
``method``: ``"vec0"`` asks sqlite-vec; ``"auto"`` (the default) and ``"exact"`` search the packed
float32 copy of the table (``fastsearch``) exactly, except inside an open transaction on ``conn``,
where vec0 answers because it sees that transaction's uncommitted rows.

Quantised first passes (int8, sign bits) were not faster than the exact path on the data
measured (``bench/knn.py``), so they live in ``bench/quantised_search.py``, not here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import apsw
import numpy as np

from gallery_app.core.errors import StoreError
from gallery_app.core.store.fastsearch import cache
from gallery_app.core.store.vectors import (
    Neighbor,
    VectorTable,
    checked_vectors,
    knn,
    parse_filters,
    similarity_from_distance,
    validate_k,
)

SEARCH_METHODS = ("auto", "exact", "vec0")


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
    rowids, distances = cache.get_index(conn, table).search(vector, k, filters)
    return [Neighbor(int(r), float(d), similarity_from_distance(float(d), table.metric))
            for r, d in zip(rowids, distances)]


#: The metadata key ``similarities`` puts each row's hubness under, when asked for it.
HUBNESS = "hubness"
#: The metadata keys ``similarities`` puts, when asked ``within`` a column, each query's similarity to each row's
#: group centroid (rows x queries) and each row's own cosine with that centroid (rows) under.
GROUP_SIMILARITY = "group_similarity"
GROUP_ALIGNMENT = "group_alignment"


def similarities(conn: apsw.Connection, table: VectorTable, queries: np.ndarray, *, model_key: str,
                 where: Mapping[str, Any] | None = None,
                 hubness_k: int = 0, within: str | None = None) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Every row's cosine similarity to each query: ``(rowids, similarities[rows, queries], metadata)``.

    For rankers that aggregate rows into groups (a chat passage is as good as its best window) and
    weigh metadata (the day) against similarity: a top-k list would cut groups off arbitrarily.
    With ``hubness_k``, ``metadata[HUBNESS]`` is each row's mean similarity to its nearest other rows
    (``PackedIndex.hubness``). With ``within`` (a metadata column), the rows are grouped by it and
    ``metadata[GROUP_SIMILARITY]`` / ``metadata[GROUP_ALIGNMENT]`` say how near each query is to each row's
    group as a whole (``blended_with_groups``). Reads the committed table (the packed copy), so call it
    outside a write transaction.
    """
    if table.metric != "cosine":
        raise StoreError(f"{table.name} is not a cosine table.")
    matrix = checked_vectors(table, model_key, np.atleast_2d(queries), single=False)
    filters = parse_filters(table, where)
    index = cache.get_index(conn, table)
    positions = index.selection(filters)
    columns = dict(index.metadata)
    if hubness_k:
        columns[HUBNESS] = index.hubness(hubness_k)
    if positions is None:
        vectors, factor, rowids = index.vectors, index.row_factor, index.rowids
        metadata = columns
    else:
        vectors, factor, rowids = index.vectors[positions], index.row_factor[positions], index.rowids[positions]
        metadata = {name: values[positions] for name, values in columns.items()}
    norms = np.maximum(np.linalg.norm(matrix, axis=1), 1e-12)
    scores = (vectors @ matrix.T) * factor[:, None] / norms[None, :]
    if within is not None:
        group, centroids, alignment = index.group_centroids(within)
        if positions is not None:
            group, alignment = group[positions], alignment[positions]
        metadata = {**metadata, GROUP_SIMILARITY: ((centroids @ matrix.T) / norms[None, :])[group],
                    GROUP_ALIGNMENT: alignment}
    return rowids, scores, metadata


def blended_with_groups(scores: np.ndarray, metadata: dict[str, np.ndarray], weight: float) -> np.ndarray:
    """``scores`` (rows x queries, cosine) as if each row's unit vector were first moved ``weight`` x towards its
    group's centroid and normalised again: cos(q, (x + w·c) / |x + w·c|) = (q·x + w·q·c) / √(1 + w² + 2w·x·c).
    A row alone in its group keeps its score."""
    if not weight:
        return scores
    length = np.sqrt(1.0 + weight * weight + 2.0 * weight * metadata[GROUP_ALIGNMENT])
    return (scores + weight * metadata[GROUP_SIMILARITY]) / length[:, None]
