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
    existing_vector_table,
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


def open_store_to_read(path: Path | str | None = None) -> apsw.Connection:
    """``open_store()``, or, when the data folder cannot be written (a backup disk, a read-only mount, a folder a
    sync tool locked), the file read as it lies on disk: commands that only read still work, and any write is
    refused with ``StoreUnwritable`` (``store_failure``), never half-done.

    Only when nothing could be missing from that view: no write-ahead log with commits in it (SQLite cannot
    read one it may not lock) and every migration of this version applied (none can be run). Otherwise the
    first refusal stands.
    """
    from gallery_app.core.errors import StoreUnwritable
    from gallery_app.core.store.connection import open_as_it_lies
    from gallery_app.core.store.migrations import MIGRATIONS, applied_migrations

    if path is None:
        from gallery_app.core.paths import database_path

        path = database_path()
    try:
        return open_store(path)
    except StoreUnwritable:
        conn = open_as_it_lies(path)
        if conn is None:
            raise
        if set(applied_migrations(conn)) != {name for name, _ in MIGRATIONS}:
            conn.close()
            raise
        return conn


__all__ = [
    "MAX_K", "Neighbor", "VectorTable", "atomic", "close_connection", "connect", "count_vectors", "delete_vectors",
    "ensure_vector_table", "existing_vector_table", "get_vector_table", "insert_vectors", "knn", "list_vector_tables",
    "migrate", "open_store", "open_store_to_read", "sqlite_versions",
]
