"""The one-file store: SQLite through apsw, sqlite-vec vector tables, named migrations."""

from __future__ import annotations

from pathlib import Path

import apsw

from gallery_app.core.store.connection import close_connection, connect, sqlite_versions
from gallery_app.core.store.migrations import migrate
from gallery_app.core.store.transactions import atomic
from gallery_app.core.store.vectors import (
    MAX_K,
    Neighbor,
    VectorTable,
    count_vectors,
    delete_vectors,
    ensure_vector_table,
    get_vector_table,
    insert_vectors,
    knn,
    list_vector_tables,
)


def open_store(path: Path | str | None = None) -> apsw.Connection:
    """Open (creating and migrating as needed) the app's database; default: the data folder's file."""
    if path is None:
        from gallery_app.core.paths import database_path

        path = database_path()
    conn = connect(path)
    migrate(conn)
    return conn


__all__ = [
    "MAX_K", "Neighbor", "VectorTable", "atomic", "close_connection", "connect", "count_vectors", "delete_vectors",
    "ensure_vector_table", "get_vector_table", "insert_vectors", "knn", "list_vector_tables",
    "migrate", "open_store", "sqlite_versions",
]
