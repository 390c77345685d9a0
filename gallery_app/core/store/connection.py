"""The one way to open the database: apsw with sqlite-vec loaded, WAL, foreign keys, a busy timeout.

Python's own ``sqlite3`` cannot load extensions on many builds (this machine's and macOS's
system Python among them), so the store uses apsw, which bundles a current SQLite.
Every thread opens its own connection; WAL lets readers go on while a writer commits.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import apsw

from gallery_app.core.errors import StoreError

DEFAULT_BUSY_TIMEOUT_MS = 10_000


def _load_sqlite_vec(conn: apsw.Connection) -> None:
    try:
        import sqlite_vec
    except ImportError as exc:
        raise StoreError(
            "The vector search extension (sqlite-vec) is not installed.",
            hint="Reinstall the app, or run: pip install sqlite-vec",
        ) from exc
    try:
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
    except apsw.Error as exc:
        raise StoreError(
            f"The vector search extension (sqlite-vec) could not be loaded: {exc}.",
            hint="Reinstall sqlite-vec for this platform.",
        ) from exc
    finally:
        # Nothing else should be able to load code into this connection later.
        conn.enable_load_extension(False)


def _switch_to_wal(conn: apsw.Connection, timeout_ms: int) -> str:
    # Switching a new file to WAL needs it to itself for a moment, and SQLite answers "locked" at once
    # instead of calling the busy handler when another connection is opening it too: retry briefly.
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        try:
            return conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        except apsw.BusyError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.005)


def connect(path: Path | str, *, readonly: bool = False,
            busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> apsw.Connection:
    """Open ``path`` (created unless ``readonly``) ready for the app: sqlite-vec, WAL, foreign keys."""
    path = str(path)
    in_memory = path == ":memory:" or path.startswith("file::memory:")
    if not in_memory:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    try:
        conn = apsw.Connection(path, flags=flags | apsw.SQLITE_OPEN_URI)
    except apsw.Error as exc:
        raise StoreError(f"The database {path} could not be opened: {exc}.") from exc
    try:
        conn.set_busy_timeout(busy_timeout_ms)
        _load_sqlite_vec(conn)
        if not in_memory and not readonly:
            mode = _switch_to_wal(conn, busy_timeout_ms)
            if str(mode).lower() != "wal":
                raise StoreError(f"The database {path} could not switch to WAL mode (got {mode}).")
        # NORMAL is durable against an app crash in WAL mode; only a power cut may lose the last commit.
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
    except apsw.NotADBError as exc:
        conn.close()
        raise StoreError(f"{path} is not a gallery_app database (or it is damaged).") from exc
    except BaseException:
        conn.close()
        raise
    return conn


@contextlib.contextmanager
def atomic(conn: apsw.Connection) -> Iterator[apsw.Connection]:
    """All statements inside commit together or not at all; nests through savepoints."""
    with conn:
        yield conn


def sqlite_versions(conn: apsw.Connection) -> dict[str, str]:
    return {
        "sqlite": conn.execute("SELECT sqlite_version()").fetchone()[0],
        "sqlite_vec": conn.execute("SELECT vec_version()").fetchone()[0],
        "apsw": apsw.apsw_version(),
    }
