"""Vector tables (sqlite-vec ``vec0``) named after the model that made their vectors.

Two models can make equally valid vectors of the same size that mean nothing to each
other, so a table belongs to exactly one model: the registry row records the model
key, dimensions and metric, and every insert and search must name the model it comes
from. Anything that does not match is refused; a silent wrong answer is worse than an error.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import apsw
import numpy as np

from gallery_app.core.errors import StoreError, VectorModelMismatch
from gallery_app.core.store.transactions import atomic

#: sqlite-vec refuses KNN queries with a larger k.
MAX_K = 4096
METRICS = ("cosine", "l2")
METADATA_TYPES = ("integer", "float", "text", "boolean")
FILTER_OPERATORS = ("=", "!=", "<", "<=", ">", ">=", "in")
_IDENTIFIER = re.compile(r"^[a-z][a-z0-9_]{0,62}$")


@dataclass(frozen=True)
class VectorTable:
    name: str
    kind: str
    model_key: str
    dims: int
    metric: str = "cosine"
    metadata: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Neighbor:
    rowid: int
    distance: float
    similarity: float


def vector_table_name(kind: str, model_key: str) -> str:
    """``vec_<kind>_<model key>``, e.g. ``vec_chunks_multilingual_e5_small``."""
    slug = re.sub(r"[^a-z0-9]+", "_", model_key.lower()).strip("_")
    if not _IDENTIFIER.match(kind) or not slug:
        raise StoreError(f"Cannot name a vector table for kind {kind!r} and model {model_key!r}.")
    return f"vec_{kind}_{slug}"


def _check_identifier(name: str, what: str) -> None:
    if not _IDENTIFIER.match(name):
        raise StoreError(f"{what} {name!r} is not a valid column name (lower-case letters, digits, _).")


def _row_to_table(row: Sequence[Any]) -> VectorTable:
    name, kind, model_key, dims, metric, metadata = row
    return VectorTable(name, kind, model_key, int(dims), metric, json.loads(metadata))


def get_vector_table(conn: apsw.Connection, kind: str, model_key: str) -> VectorTable | None:
    row = conn.execute(
        "SELECT table_name, kind, model_key, dims, metric, metadata FROM vector_tables "
        "WHERE kind = ? AND model_key = ?",
        (kind, model_key),
    ).fetchone()
    return _row_to_table(row) if row else None


def list_vector_tables(conn: apsw.Connection) -> list[VectorTable]:
    rows = conn.execute(
        "SELECT table_name, kind, model_key, dims, metric, metadata FROM vector_tables ORDER BY table_name"
    ).fetchall()
    return [_row_to_table(row) for row in rows]


def ensure_vector_table(conn: apsw.Connection, kind: str, model_key: str, dims: int, *,
                        metric: str = "cosine", metadata: Mapping[str, str] | None = None) -> VectorTable:
    """The table for (kind, model), created and registered on first use; refused if it disagrees."""
    metadata = dict(metadata or {})
    if metric not in METRICS:
        raise StoreError(f"Unknown vector metric {metric!r}; use one of {', '.join(METRICS)}.")
    if not isinstance(dims, int) or dims <= 0:
        raise StoreError(f"A vector table needs a positive number of dimensions, not {dims!r}.")
    for column, column_type in metadata.items():
        _check_identifier(column, "Metadata column")
        if column_type not in METADATA_TYPES:
            raise StoreError(f"Metadata column {column!r} has unknown type {column_type!r}.")
    wanted = VectorTable(vector_table_name(kind, model_key), kind, model_key, dims, metric, metadata)
    # Looked up first without the write lock: a search that only reads must not wait for an import.
    existing = get_vector_table(conn, kind, model_key)
    with contextlib.nullcontext() if existing is not None else atomic(conn):
        existing = existing or get_vector_table(conn, kind, model_key)
        if existing is not None:
            if (existing.dims, existing.metric, dict(existing.metadata)) != (dims, metric, metadata):
                raise VectorModelMismatch(
                    f"The stored {kind} vectors of model {model_key} have {existing.dims} dimensions "
                    f"({existing.metric}), but {dims} dimensions ({metric}) were asked for.",
                    hint="The model files may have changed; re-index with the current model.",
                )
            return existing
        clash = conn.execute(
            "SELECT model_key FROM vector_tables WHERE table_name = ?", (wanted.name,)
        ).fetchone()
        if clash:
            raise VectorModelMismatch(
                f"Models {clash[0]!r} and {model_key!r} would share the vector table {wanted.name}."
            )
        columns = [f"embedding float[{dims}] distance_metric={metric}"]
        columns += [f"{column} {column_type}" for column, column_type in metadata.items()]
        conn.execute(f"CREATE VIRTUAL TABLE {wanted.name} USING vec0({', '.join(columns)})")
        conn.execute(
            "INSERT INTO vector_tables(table_name, kind, model_key, dims, metric, metadata) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (wanted.name, kind, model_key, dims, metric, json.dumps(metadata, sort_keys=True)),
        )
    return wanted


#: ``app_state`` key of a vector table's change counter, bumped in the same transaction as every write
#: (see ``table_version``): in-memory search indexes compare it to notice changes by other processes.
VERSION_KEY_PREFIX = "vector_table_version:"

#: Called after a write through this process has committed (not when it is part of an outer,
#: still open transaction): ``listener(conn, table, old_version, new_version, change)`` where
#: ``change`` is ``("insert", rowids, vectors, metadata)`` or ``("delete", rowids)``.
WriteListener = Callable[[apsw.Connection, VectorTable, int, int, tuple], None]
WRITE_LISTENERS: list[WriteListener] = []

def existing_vector_table(conn: apsw.Connection, kind: str, model_key: str, dims: int, *,
                          metric: str = "cosine", metadata: Mapping[str, str] | None = None) -> VectorTable | None:
    """The table for (kind, model) if one is registered, checked as ``ensure_vector_table`` checks it (refused
    if it disagrees); None otherwise: reading never creates a table."""
    if get_vector_table(conn, kind, model_key) is None:
        return None
    return ensure_vector_table(conn, kind, model_key, dims, metric=metric, metadata=metadata)


def table_version(conn: apsw.Connection, table: VectorTable) -> int:
    """How many committed writes ``table`` has seen (0 before the first)."""
    row = conn.execute("SELECT value FROM app_state WHERE key = ?", (VERSION_KEY_PREFIX + table.name,)).fetchone()
    return int(row[0]) if row else 0


def _bump_version(conn: apsw.Connection, table: VectorTable) -> int:
    old = table_version(conn, table)
    conn.execute(
        "INSERT INTO app_state(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (VERSION_KEY_PREFIX + table.name, str(old + 1)),
    )
    return old


def _notify(conn: apsw.Connection, table: VectorTable, old: int, change: tuple) -> None:
    if conn.in_transaction:
        # Part of a larger transaction that may still roll back: readers find the bumped counter later.
        return
    for listener in list(WRITE_LISTENERS):
        listener(conn, table, old, old + 1, change)


def checked_vectors(table: VectorTable, model_key: str, vectors: np.ndarray, *, single: bool) -> np.ndarray:
    if model_key != table.model_key:
        raise VectorModelMismatch(
            f"Vectors from model {model_key!r} cannot go into {table.name}, "
            f"which holds vectors of model {table.model_key!r}.",
            hint="Re-index with one model, or switch back to the model that made this index.",
        )
    array = np.asarray(vectors)
    expected_ndim = 1 if single else 2
    if array.ndim != expected_ndim or array.shape[-1] != table.dims:
        raise VectorModelMismatch(
            f"{table.name} holds {table.dims}-dimensional vectors of model {table.model_key}; "
            f"got an array of shape {array.shape}."
        )
    if not np.issubdtype(array.dtype, np.floating):
        raise VectorModelMismatch(f"Vectors must be floating point, got {array.dtype}.")
    array = np.ascontiguousarray(array, dtype=np.float32)
    if not np.all(np.isfinite(array)):
        raise VectorModelMismatch("A vector contains NaN or infinity; the model output is broken.")
    return array


def insert_vectors(conn: apsw.Connection, table: VectorTable, rowids: Sequence[int], vectors: np.ndarray, *,
                   model_key: str, metadata: Mapping[str, Sequence[Any]] | None = None) -> None:
    """Insert (or replace) one vector per rowid, all in one transaction."""
    array = checked_vectors(table, model_key, vectors, single=False)
    rowids = [int(rowid) for rowid in rowids]
    if len(rowids) != len(array):
        raise StoreError(f"{len(rowids)} row ids were given for {len(array)} vectors.")
    metadata = dict(metadata or {})
    missing = set(table.metadata) - set(metadata)
    extra = set(metadata) - set(table.metadata)
    if missing or extra:
        raise StoreError(
            f"{table.name} needs metadata {sorted(table.metadata)}; got {sorted(metadata)}."
        )
    columns = list(table.metadata)
    for column in columns:
        if len(metadata[column]) != len(rowids):
            raise StoreError(f"Metadata {column!r} has {len(metadata[column])} values for {len(rowids)} vectors.")
    placeholders = ", ".join(["?"] * (2 + len(columns)))
    insert = f"INSERT INTO {table.name}(rowid, embedding{''.join(', ' + c for c in columns)}) VALUES ({placeholders})"
    rows = (
        (rowid, vector.tobytes(), *(metadata[column][i] for column in columns))
        for i, (rowid, vector) in enumerate(zip(rowids, array))
    )
    with atomic(conn):
        # vec0 has no UPSERT; replacing a row is delete-then-insert inside the same transaction.
        conn.executemany(f"DELETE FROM {table.name} WHERE rowid = ?", [(rowid,) for rowid in rowids])
        conn.executemany(insert, rows)
        old = _bump_version(conn, table)
    _notify(conn, table, old, ("insert", rowids, array, {c: list(metadata[c]) for c in columns}))


def delete_vectors(conn: apsw.Connection, table: VectorTable, rowids: Sequence[int]) -> None:
    rowids = [int(r) for r in rowids]
    with atomic(conn):
        conn.executemany(f"DELETE FROM {table.name} WHERE rowid = ?", [(r,) for r in rowids])
        old = _bump_version(conn, table)
    _notify(conn, table, old, ("delete", rowids))


def count_vectors(conn: apsw.Connection, table: VectorTable) -> int:
    return conn.execute(f"SELECT count(*) FROM {table.name}").fetchone()[0]


def similarity_from_distance(distance: float, metric: str) -> float:
    if metric == "cosine":
        return 1.0 - distance
    # For unit vectors |a-b|^2 = 2 - 2cos, so L2 tables can still report a cosine similarity.
    return 1.0 - distance * distance / 2.0


def parse_filters(table: VectorTable, where: Mapping[str, Any] | None) -> list[tuple[str, str, Any]]:
    """``{"chat_id": 3, "day": [(">=", 20240501), ("<=", 20240531)], "rowid": ("in", ids)}`` → checked
    ``[(column, operator, value)]``. A column takes one condition or a list of them (all must hold);
    ``rowid`` (the row's key) can be filtered like a metadata column, "in" takes a collection."""
    filters = []
    for column, condition in (where or {}).items():
        if column != "rowid" and column not in table.metadata:
            raise StoreError(
                f"Cannot filter {table.name} on {column!r}; it can filter on: "
                f"{', '.join(['rowid', *table.metadata])}."
            )
        for one in condition if isinstance(condition, list) else [condition]:
            operator, value = one if isinstance(one, tuple) else ("=", one)
            if operator not in FILTER_OPERATORS:
                raise StoreError(f"Unsupported filter operator {operator!r}.")
            if operator == "in":
                if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
                    raise StoreError(f"The filter \"{column} in\" needs a collection of values, not {value!r}.")
                value = tuple(value)
            filters.append((column, operator, value))
    return filters


def _filter_clause(table: VectorTable, where: Mapping[str, Any] | None) -> tuple[str, list[Any]]:
    """The checked filters as SQL on declared metadata columns only."""
    clauses, params = [], []
    for column, operator, value in parse_filters(table, where):
        if operator == "in":
            clauses.append(f" AND {column} IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(list(value)))
        else:
            clauses.append(f" AND {column} {operator} ?")
            params.append(value)
    return "".join(clauses), params


def validate_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= int(k) <= MAX_K:
        raise StoreError(f"The number of results must be a whole number from 1 to {MAX_K}, not {k!r}.")
    return int(k)


def knn(conn: apsw.Connection, table: VectorTable, query: np.ndarray, *, model_key: str, k: int = 10,
        where: Mapping[str, Any] | None = None) -> list[Neighbor]:
    """The ``k`` nearest rows to ``query``, closest first, with ``similarity = 1 - cosine distance``."""
    k = validate_k(k)
    vector = checked_vectors(table, model_key, query, single=True)
    filters, params = _filter_clause(table, where)
    sql = (
        f"SELECT rowid, distance FROM {table.name} "
        f"WHERE embedding MATCH ? AND k = ?{filters} ORDER BY distance"
    )
    rows = conn.execute(sql, (vector.tobytes(), k, *params)).fetchall()
    return [Neighbor(int(rowid), float(d), similarity_from_distance(float(d), table.metric)) for rowid, d in rows]
