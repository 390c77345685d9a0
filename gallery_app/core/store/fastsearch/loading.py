"""Reading a whole vec0 table back into NumPy arrays, fast.

Asking ``vec0`` for every ``embedding`` costs about 20 µs a row (2 s for 100k rows). sqlite-vec
0.1.x keeps the vectors in chunk blobs of its shadow tables (``<table>_rowids`` maps a rowid to
(chunk, offset); ``<table>_vector_chunks00`` holds one float32 blob per chunk), which read in
tens of milliseconds. That layout is sqlite-vec's, not ours, so it is used only when it looks
exactly as expected and checked against the row count; otherwise the slow public path is taken.
"""

from __future__ import annotations

from dataclasses import dataclass

import apsw
import numpy as np

from gallery_app.core.store.vectors import VectorTable, table_version

_NUMPY_TYPES = {"integer": np.int64, "float": np.float64, "boolean": np.int64}


@dataclass(frozen=True)
class TableRows:
    version: int
    rowids: np.ndarray            # int64 (n,), ascending
    vectors: np.ndarray           # float32 (n, dims), C-contiguous
    metadata: dict[str, np.ndarray]


def metadata_array(values: list, column_type: str) -> np.ndarray:
    """One metadata column as a NumPy array the filters can compare (text as a fixed-width str array)."""
    if column_type in _NUMPY_TYPES and all(v is not None for v in values):
        return np.asarray(values, dtype=_NUMPY_TYPES[column_type])
    if column_type == "text" and all(isinstance(v, str) for v in values):
        return np.asarray(values, dtype=str) if values else np.empty(0, dtype="<U1")
    return np.asarray(values, dtype=object)


def _shadow_vectors(conn: apsw.Connection, table: VectorTable, rowids: np.ndarray) -> np.ndarray | None:
    name = table.name
    try:
        places = conn.execute(f'SELECT rowid, chunk_id, chunk_offset FROM "{name}_rowids" ORDER BY rowid').fetchall()
        chunks = conn.execute(f'SELECT rowid, vectors FROM "{name}_vector_chunks00" ORDER BY rowid')
    except apsw.SQLError:
        return None
    if len(places) != len(rowids):
        return None
    out = np.empty((len(rowids), table.dims), np.float32)
    if not places:
        return out
    place = np.array(places, dtype=np.int64)
    if not np.array_equal(place[:, 0], rowids):
        return None
    # Rows grouped by chunk, so each chunk blob is copied straight into its rows of ``out``.
    by_chunk = np.argsort(place[:, 1], kind="stable")
    chunk_ids = place[by_chunk, 1]
    filled = 0
    for chunk_id, blob in chunks:
        first, last = np.searchsorted(chunk_ids, [chunk_id, chunk_id + 1])
        if first == last:
            continue
        if len(blob) % (4 * table.dims):
            return None
        vectors = np.frombuffer(blob, np.float32).reshape(-1, table.dims)
        rows = by_chunk[first:last]
        offsets = place[rows, 2]
        if offsets.max() >= len(vectors):
            return None
        out[rows] = vectors[offsets]
        filled += last - first
    return out if filled == len(rowids) else None


def read_table(conn: apsw.Connection, table: VectorTable) -> TableRows:
    """Every row of ``table`` with its metadata and the change counter, from one consistent snapshot."""
    columns = list(table.metadata)
    select = "".join(f", {c}" for c in columns)
    with conn:  # one read transaction: counter, rows and vectors agree
        version = table_version(conn, table)
        rows = conn.execute(f"SELECT rowid{select} FROM {table.name} ORDER BY rowid").fetchall()
        rowids = np.fromiter((r[0] for r in rows), np.int64, len(rows))
        vectors = _shadow_vectors(conn, table, rowids)
        if vectors is None:
            blobs = conn.execute(f"SELECT embedding FROM {table.name} ORDER BY rowid").fetchall()
            vectors = np.frombuffer(b"".join(b for (b,) in blobs), np.float32).reshape(-1, table.dims).copy()
    metadata = {c: metadata_array([r[1 + i] for r in rows], table.metadata[c]) for i, c in enumerate(columns)}
    return TableRows(version, rowids, vectors, metadata)
