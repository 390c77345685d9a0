"""Photo vectors: one ``vec_photos_<model space>`` table, keyed by ``photos.id``.

The vision model names the table, so a different CLIP gets its own vectors and a search never
compares vectors of two models. The photo's source and the day of its timeline time (``taken_day``,
YYYYMMDD) are stored beside its vector, so a search can be limited to uploads or a range of days
without joining back to ``photos``; ``refresh_timeline`` keeps that day in step with ``photos.taken_at``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import apsw
import numpy as np

from gallery_app.core.models.runtimes.vector_model import VectorModel
from gallery_app.core.photos.filters import day_number_of
from gallery_app.core.photos.library import PhotoRecord, photos_by_ids, refresh_taken_at
from gallery_app.core.store import atomic, ensure_vector_table, insert_vectors
from gallery_app.core.store.vectors import VectorTable, delete_vectors, get_vector_table, list_vector_tables

VECTOR_KIND = "photos"
PHOTO_METADATA = {"source": "text", "taken_day": "integer"}


def photo_vector_table(conn: apsw.Connection, model: VectorModel) -> VectorTable:
    return ensure_vector_table(conn, VECTOR_KIND, model.model_key, model.dims, metadata=PHOTO_METADATA)


def existing_photo_vector_table(conn: apsw.Connection, model: VectorModel) -> VectorTable | None:
    return get_vector_table(conn, VECTOR_KIND, model.model_key)


def vector_metadata(records: Sequence[PhotoRecord]) -> dict[str, list]:
    return {"source": [r.source for r in records], "taken_day": [day_number_of(r.taken_at) for r in records]}


def store_photo_vectors(conn: apsw.Connection, model: VectorModel, records: Sequence[PhotoRecord],
                        vectors: np.ndarray) -> None:
    insert_vectors(conn, photo_vector_table(conn, model), [r.id for r in records], vectors,
                   model_key=model.model_key, metadata=vector_metadata(records))


def refresh_timeline(conn: apsw.Connection, ids: Sequence[int]) -> list[int]:
    """Recompute the photos' ``taken_at`` and re-store the vectors of those that changed (every model's)."""
    with atomic(conn):
        changed = refresh_taken_at(conn, ids)
        refresh_vector_metadata(conn, changed)
    return changed


def refresh_vector_metadata(conn: apsw.Connection, ids: Sequence[int]) -> None:
    """Re-store the photos' vectors with their rows' current source and day, in every model's table."""
    if not ids:
        return
    records = photos_by_ids(conn, ids)
    with atomic(conn):
        for table in list_vector_tables(conn):
            if table.kind != VECTOR_KIND:
                continue
            rows = conn.execute(f"SELECT rowid, embedding FROM {table.name} WHERE rowid IN "
                                "(SELECT value FROM json_each(?))", (json.dumps([int(i) for i in ids]),)).fetchall()
            rows = [(rowid, blob) for rowid, blob in rows if int(rowid) in records]
            if rows:
                ordered = [records[int(rowid)] for rowid, _ in rows]
                vectors = np.stack([np.frombuffer(blob, dtype=np.float32) for _, blob in rows])
                insert_vectors(conn, table, [r.id for r in ordered], vectors, model_key=table.model_key,
                               metadata=vector_metadata(ordered))


def stored_vectors(conn: apsw.Connection, model: VectorModel, ids: Sequence[int]) -> dict[int, np.ndarray]:
    table = existing_photo_vector_table(conn, model)
    if table is None or not ids:
        return {}
    rows = conn.execute(f"SELECT rowid, embedding FROM {table.name} WHERE rowid IN ({','.join('?' * len(ids))})",
                        [int(i) for i in ids])
    return {int(rowid): np.frombuffer(blob, dtype=np.float32).copy() for rowid, blob in rows}


def vector_rowids(conn: apsw.Connection, model: VectorModel) -> set[int]:
    table = existing_photo_vector_table(conn, model)
    if table is None:
        return set()
    return {row[0] for row in conn.execute(f"SELECT rowid FROM {table.name}")}


def photos_without_vectors(conn: apsw.Connection, model: VectorModel) -> list[PhotoRecord]:
    with_vectors = vector_rowids(conn, model)
    ids = [row[0] for row in conn.execute("SELECT id FROM photos ORDER BY id") if row[0] not in with_vectors]
    found = photos_by_ids(conn, ids)
    return [found[i] for i in ids]


def delete_photo_vectors(conn: apsw.Connection, ids: Sequence[int]) -> None:
    """Remove the photos' vectors from every model's table (vec0 rows do not cascade)."""
    for table in list_vector_tables(conn):
        if table.kind == VECTOR_KIND:
            delete_vectors(conn, table, ids)
