"""Packed indexes kept per (database file, vector table), shared by every connection of this process.

* Fresh: each search reads the table's change counter (``vectors.table_version``, one indexed
  ``app_state`` row). Writes through this process patch the cached index in place of a reload
  (``store.connect()`` calls ``follow_vector_writes``); any other difference (another connection,
  another process) reloads the table from the file.
* Thread-safe: a published index is immutable; one lock per entry serialises reloads and patches,
  so readers never wait for each other.
* Released: an entry remembers the connections that used it and is dropped once all of them are
  closed or gone (checked whenever the cache is used), on ``release()``, and least recently used
  first when the indexes together exceed ``memory_budget()`` bytes (``GALLERY_APP_VECTOR_CACHE_MB``,
  default 1024).
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from dataclasses import dataclass, field

import apsw

from gallery_app.core import paths
from gallery_app.core.store import vectors
from gallery_app.core.store.fastsearch.loading import read_table
from gallery_app.core.store.fastsearch.packed import PackedIndex
from gallery_app.core.store.vectors import VectorTable, table_version

DEFAULT_BUDGET_MB = 1024

Key = tuple[object, str]


@dataclass
class _Entry:
    lock: threading.Lock = field(default_factory=threading.Lock)
    index: PackedIndex | None = None
    connections: weakref.WeakSet = field(default_factory=weakref.WeakSet)
    last_used: float = 0.0


_entries: dict[Key, _Entry] = {}
_registry_lock = threading.Lock()


def memory_budget() -> int:
    try:
        return int(paths.vector_cache_mb(DEFAULT_BUDGET_MB) * 1024 * 1024)
    except ValueError:
        return DEFAULT_BUDGET_MB * 1024 * 1024


def _key(conn: apsw.Connection, table: VectorTable) -> Key:
    filename = conn.filename
    if not filename:  # an in-memory database belongs to its one connection
        return (("memory", id(conn)), table.name)
    return (os.path.realpath(filename), table.name)


def _is_open(conn: apsw.Connection) -> bool:
    try:
        conn.filename
    except apsw.ConnectionClosedError:
        return False
    except apsw.ThreadingViolationError:
        return True  # busy in another thread right now: certainly open
    return True


def _drop_unused() -> None:
    for key, entry in list(_entries.items()):
        if not any(_is_open(c) for c in list(entry.connections)):
            _entries.pop(key, None)


def _entry(conn: apsw.Connection, table: VectorTable) -> _Entry:
    key = _key(conn, table)
    with _registry_lock:
        entry = _entries.get(key)
        if entry is None:
            _drop_unused()
            entry = _entries[key] = _Entry()
            if not conn.filename:
                weakref.finalize(conn, _entries.pop, key, None)
        if conn not in entry.connections:
            entry.connections.add(conn)
        entry.last_used = time.monotonic()
        return entry


def _enforce_budget(keep: _Entry) -> None:
    with _registry_lock:
        _drop_unused()
        budget = memory_budget()
        by_age = sorted(_entries.items(), key=lambda item: item[1].last_used)
        total = sum(e.index.memory_bytes() for _, e in by_age if e.index is not None)
        for key, entry in by_age:
            if total <= budget:
                break
            if entry is keep or entry.index is None:
                continue
            total -= entry.index.memory_bytes()
            _entries.pop(key, None)


def get_index(conn: apsw.Connection, table: VectorTable) -> PackedIndex:
    """The current packed index of ``table`` as this connection sees the file (reloaded if stale)."""
    version = table_version(conn, table)
    entry = _entry(conn, table)
    index = entry.index
    if index is not None and index.version == version:
        return index
    with entry.lock:
        index = entry.index
        if index is None or index.version != version:
            index = entry.index = PackedIndex.from_rows(table, read_table(conn, table))
    _enforce_budget(entry)
    return index


def _on_write(conn: apsw.Connection, table: VectorTable, old: int, new: int, change: tuple) -> None:
    with _registry_lock:
        entry = _entries.get(_key(conn, table))
    if entry is None:
        return
    with entry.lock:
        index = entry.index
        if index is None or index.version != old:
            return  # something else changed the table too: the next search reloads it
        if change[0] == "insert":
            _, rowids, array, metadata = change
            entry.index = index.with_insert(rowids, array, metadata, new)
        else:
            entry.index = index.with_delete(change[1], new)


def follow_vector_writes() -> None:
    """Patch cached indexes after every vector write committed through this process (once, however often called)."""
    with _registry_lock:
        if _on_write not in vectors.WRITE_LISTENERS:
            vectors.WRITE_LISTENERS.append(_on_write)


def release(conn: apsw.Connection | None = None) -> None:
    """Drop the cached indexes of ``conn``'s database file (all of them without ``conn``)."""
    with _registry_lock:
        if conn is None:
            _entries.clear()
            return
        filename = conn.filename
        target = ("memory", id(conn)) if not filename else os.path.realpath(filename)
        for key in [key for key in _entries if key[0] == target]:
            _entries.pop(key, None)


def cached_bytes() -> int:
    with _registry_lock:
        return sum(e.index.memory_bytes() for e in _entries.values() if e.index is not None)

