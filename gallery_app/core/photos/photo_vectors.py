"""Photo vectors: one ``vec_photos_<model space>`` table, keyed by ``photos.id``.

The vision model names the table, so a different CLIP gets its own vectors and a search never
compares vectors of two models. The photo's source is stored beside its vector so a search can be
limited to uploads, captures or folders without joining back to ``photos``.
"""

from __future__ import annotations

from collections.abc import Sequence

import apsw
import numpy as np

from gallery_app.core.models.runtimes.vector_model import VectorModel
from gallery_app.core.photos.library import PhotoRecord, photos_by_ids
from gallery_app.core.store import ensure_vector_table, insert_vectors
from gallery_app.core.store.vectors import VectorTable, delete_vectors, get_vector_table, list_vector_tables

VECTOR_KIND = "photos"
PHOTO_METADATA = {"source": "text"}


def photo_vector_table(conn: apsw.Connection, model: VectorModel) -> VectorTable:
    return ensure_vector_table(conn, VECTOR_KIND, model.model_key, model.dims, metadata=PHOTO_METADATA)


def existing_photo_vector_table(conn: apsw.Connection, model: VectorModel) -> VectorTable | None:
    return get_vector_table(conn, VECTOR_KIND, model.model_key)


def store_photo_vectors(conn: apsw.Connection, model: VectorModel, records: Sequence[PhotoRecord],
                        vectors: np.ndarray) -> None:
    insert_vectors(conn, photo_vector_table(conn, model), [r.id for r in records], vectors,
                   model_key=model.model_key, metadata={"source": [r.source for r in records]})


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
