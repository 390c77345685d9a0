"""The one way to write: ``atomic()``, which takes the write lock first and waits for another writer.

Every thread writes through its own connection (``connection.connect``); WAL lets readers go on
meanwhile, and writers take turns here.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import apsw

from gallery_app.core.errors import StoreError

T = TypeVar("T")


def retry_while_busy(action: Callable[[], T], wait_s: float, pause_s: float) -> T:
    """``action()``, tried again while SQLite answers "locked" without waiting; its BusyError after ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return action()
        except apsw.BusyError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(pause_s)


#: What a writer hears when another one held the database longer than it waits.
WRITER_BUSY = "Another import is writing to the library; try again when it finishes."
#: How long a writer waits for another one's transaction. Each is short (a batch of vectors, a batch of
#: photos) except the first of a chat import, which stores all its messages at once: about 20 s for a
#: 20 MB chat on a busy 2-core machine.
WRITER_WAIT_S = 120.0


def _begin_immediate(conn: apsw.Connection, wait_s: float) -> None:
    try:  # each try waits up to the connection's busy timeout
        retry_while_busy(lambda: conn.execute("BEGIN IMMEDIATE"), wait_s, 0.01)
    except apsw.BusyError as exc:
        raise StoreError(WRITER_BUSY, hint="Nothing was changed.") from exc


@contextlib.contextmanager
def atomic(conn: apsw.Connection, *, wait_s: float | None = None) -> Iterator[apsw.Connection]:
    """The one way to write: all statements inside commit together or not at all; nests through savepoints.

    The outermost level is BEGIN IMMEDIATE, which takes the write lock before the first read. A
    deferred transaction (or apsw's savepoint) that reads first fails at once with "database is
    locked" when its read turns into a write while another connection writes: SQLite cannot call
    the busy handler for that upgrade in WAL mode. Taken up front, the lock is waited for, up to
    ``wait_s`` (default ``WRITER_WAIT_S``).
    """
    if conn.in_transaction:
        with conn:
            yield conn
        return
    _begin_immediate(conn, WRITER_WAIT_S if wait_s is None else wait_s)
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
