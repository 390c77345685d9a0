"""The one way to open the database: apsw with sqlite-vec loaded, WAL, foreign keys, a busy timeout.

Python's own ``sqlite3`` cannot load extensions on many builds (this machine's and macOS's
system Python among them), so the store uses apsw, which bundles a current SQLite.
Every thread opens its own connection; WAL lets readers go on while a writer commits.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import apsw

from gallery_app.core.errors import StoreDamaged, StoreError, StoreFull, StoreUnwritable
from gallery_app.core.paths import NEW_DATA_FOLDER, make_data_folder
from gallery_app.core.store.fastsearch import cache
from gallery_app.core.store.transactions import retry_while_busy

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
    return retry_while_busy(lambda: conn.execute("PRAGMA journal_mode=WAL").fetchone()[0],
                            timeout_ms / 1000, 0.005)


def _no_checkpoint_on_close(path: str) -> None:
    wal = Path(f"{path}-wal")
    if not wal.is_file() or wal.stat().st_size == 0:
        return  # nothing to copy; closing then removes the empty log this process made
    for conn in apsw.connections():
        # A connection busy on another thread meets the damage itself and comes here with it.
        with contextlib.suppress(OSError, apsw.ThreadingViolationError):
            if conn.filename and os.path.samefile(conn.filename, path):
                conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)


def _damaged(path: str, what: str) -> StoreDamaged:
    # From now on the file stays exactly as it is: closing a connection would otherwise copy its
    # write-ahead log into it, over pages a recovery tool may need.
    _no_checkpoint_on_close(path)
    return StoreDamaged(
        f"The database {path} {what}. Nothing was changed in it.",
        hint=f"Restore it from a backup, or move it out of {Path(path).parent} (the app then starts an empty one), "
             f"{NEW_DATA_FOLDER}. `gallery-app-cli doctor` checks the whole file.")


def _unwritable(path: str, detail: str) -> StoreUnwritable:
    folder = Path(path).parent
    if Path(path).is_dir():
        what = f"The database {path} is a folder, not a file"
    elif not os.access(folder, os.W_OK | os.X_OK):
        what = f"The data folder {folder} is read-only, so the database {path} cannot be opened for writing"
    elif locked := [name for name in (path, f"{path}-wal", f"{path}-shm")
                    if Path(name).exists() and not os.access(name, os.W_OK)]:
        # SQLite makes the -wal and -shm files with the database's permissions: they stay read-only after a chmod.
        what = f"{', '.join(locked)} {'is' if len(locked) == 1 else 'are'} read-only, so the database cannot be written"
    else:
        what = f"The database {path} cannot be opened for writing ({detail})"
    return StoreUnwritable(
        f"{what}. Nothing was changed.",
        hint=f"Make the folder and the file writable for you, {NEW_DATA_FOLDER} "
             "(to keep this data, copy the folder somewhere writable and use that copy).")


def store_failure(exc: BaseException, path: Path | str) -> StoreError | None:
    """What to tell a person when ``exc`` says the database file is damaged or cannot be written; else None."""
    path = str(path)
    if isinstance(exc, apsw.NotADBError):
        return _damaged(path, "is not a gallery_app database (not an SQLite file, or its first page is damaged)")
    if isinstance(exc, apsw.CorruptError):
        return _damaged(path, f"is damaged ({exc})")
    if isinstance(exc, (apsw.ReadOnlyError, apsw.CantOpenError, apsw.PermissionsError)):
        return _unwritable(path, str(exc))
    # sqlite-vec reports a full disk met while making its tables as a plain SQL error with SQLite's words.
    if isinstance(exc, apsw.FullError) or (isinstance(exc, apsw.Error) and "database or disk is full" in str(exc)):
        folder = Path(path).parent
        return StoreFull(f"The disk holding {folder} is full, so {Path(path).name} could not grow: what was being "
                         "saved was undone, and the library is as it was before.",
                         hint="Free some space on that disk (or move the data folder to a larger one: Settings, "
                              "GALLERY_APP_DATA_DIR), then run the same import or command again.")
    return None


def check_integrity(conn: apsw.Connection, path: Path | str) -> None:
    """SQLite's full ``integrity_check`` (every page, and every index against its table); slow on big files.

    Raises ``StoreDamaged`` naming the first problems found.
    """
    _check(conn, str(path), "integrity_check")


def _check(conn: apsw.Connection, path: str, pragma: str) -> None:
    try:
        found = [row[0] for row in conn.execute(f"PRAGMA {pragma}(5)")]
    except apsw.Error as exc:
        raise store_failure(exc, path) or StoreError(f"Checking the database {path} failed: {exc}.") from exc
    if found != ["ok"]:
        lines = [line for row in found for line in row.splitlines() if line.strip() and not line.startswith("***")]
        raise _damaged(path, "is damaged: " + "; ".join(lines))


def refuse_if_damaged(conn: apsw.Connection) -> None:
    """Raises ``StoreDamaged`` when SQLite's ``quick_check`` finds a damaged page; for a job about to write.

    A damaged page only shows when a query reads it, and an import may never read the damaged table:
    without this it would write on into a file that ``chat list`` already calls damaged (issue 23).
    quick_check reads every page but skips checking indexes against their tables (0.2 s for
    half a gigabyte here, from the page cache), so it is cheap next to an import.
    """
    path = conn.filename
    if path and path != ":memory:" and not path.startswith("file::memory:"):
        _check(conn, path, "quick_check")


def _refuse_unknown_file(conn: apsw.Connection, path: str) -> None:
    # Reading the schema reads the file's first page, so a damaged file stops here before anything is
    # written (the switch to WAL writes the header); an SQLite file of another program is not migrated.
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_schema")}
    if names and "schema_migrations" not in names:
        raise _damaged(path, "is an SQLite database, but not one gallery_app made (it has no schema_migrations "
                             "table)")


def connect(path: Path | str, *, readonly: bool = False,
            busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> apsw.Connection:
    """Open ``path`` (created unless ``readonly``) ready for the app: sqlite-vec, WAL, foreign keys.

    A damaged, foreign or unwritable file raises ``StoreDamaged`` or ``StoreUnwritable`` and is not changed.
    """
    path = str(path)
    in_memory = path == ":memory:" or path.startswith("file::memory:")
    if not in_memory:
        make_data_folder(Path(path).parent)
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    try:
        conn = apsw.Connection(path, flags=flags | apsw.SQLITE_OPEN_URI)
    except apsw.Error as exc:
        failure = store_failure(exc, path)
        raise failure or StoreError(f"The database {path} could not be opened: {exc}.") from exc
    try:
        conn.set_busy_timeout(busy_timeout_ms)
        _load_sqlite_vec(conn)
        if not in_memory and not readonly:
            _refuse_unknown_file(conn, path)
            mode = _switch_to_wal(conn, busy_timeout_ms)
            if str(mode).lower() != "wal":
                raise StoreError(f"The database {path} could not switch to WAL mode (got {mode}).")
        # NORMAL is durable against an app crash in WAL mode; only a power cut may lose the last commit.
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
    except apsw.Error as exc:
        failure = store_failure(exc, path)
        conn.close()
        if failure is None:
            raise
        raise failure from exc
    except BaseException:
        conn.close()
        raise
    cache.follow_vector_writes()
    return conn


def open_as_it_lies(path: Path | str) -> apsw.Connection | None:
    """``path`` opened read-only and immutable (no lock, no log, nothing written), or None when that could miss
    committed data (a write-ahead log with content beside it) or the file cannot be read."""
    path = Path(path)
    wal = path.with_name(path.name + "-wal")
    if not path.is_file() or not os.access(path, os.R_OK) or (wal.exists() and wal.stat().st_size > 0):
        return None
    try:
        conn = apsw.Connection(f"{path.resolve().as_uri()}?immutable=1",
                               flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    except apsw.Error:
        return None
    try:
        _load_sqlite_vec(conn)
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()
    except (apsw.Error, StoreError):
        conn.close()
        return None
    cache.follow_vector_writes()
    return conn


def data_version(conn: apsw.Connection) -> int:
    """Changes whenever another connection commits (this connection's own commits leave it alone)."""
    return conn.execute("PRAGMA data_version").fetchone()[0]


def close_connection(conn: apsw.Connection) -> None:
    """Closes ``conn`` after emptying the write-ahead log with a statement.

    The last connection to close copies the log into the database and deletes it, and apsw's
    ``close()`` holds the GIL meanwhile (20-30 ms for a 30 MB log, measured): every other thread, the
    window's included, waits. As a statement the copy lets them run. Busy timeout 0: a reader on another
    connection makes the checkpoint stop where it is rather than wait for it.
    """
    try:
        if conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, -1) == 0 and not conn.in_transaction:
            conn.set_busy_timeout(0)
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except apsw.Error:
        pass  # a damaged or vanished file: close() below copes with it as it always did
    conn.close()


def sqlite_versions(conn: apsw.Connection) -> dict[str, str]:
    return {
        "sqlite": conn.execute("SELECT sqlite_version()").fetchone()[0],
        "sqlite_vec": conn.execute("SELECT vec_version()").fetchone()[0],
        "apsw": apsw.apsw_version(),
    }
