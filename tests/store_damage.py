"""Damaged and unwritable data folders for the storage tests, made from a real store and compared byte for byte."""

from __future__ import annotations

import ctypes
import hashlib
import os
import random
import shutil
import subprocess
from pathlib import Path

import apsw

from gallery_app.core.paths import DATABASE_FILENAME
from gallery_app.core.store import open_store

PR_CAPBSET_DROP = 24  # <linux/prctl.h>

#: The commands that only read, run on every damaged store.
READING_COMMANDS = [["doctor"], ["chat", "list"], ["chat", "ask", "What was the key safe code at the cottage?",
                                                   "--embedder", "all-minilm-l6-v2-int8"], ["photos", "list"]]


def copy_store(source: apsw.Connection, folder: Path) -> Path:
    """A closed, consistent copy of an open store (SQLite's backup), as a person's data folder holds it."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / DATABASE_FILENAME
    copy = open_store(target)
    with copy.backup("main", source, "main") as backup:
        backup.step()
    copy.close()
    return target


def truncate(db: Path, size: int) -> None:
    with db.open("r+b") as file:
        file.truncate(size)


def garble_table(db: Path, table: str) -> int:
    """Overwrite the root page of ``table`` with random bytes; every read of the table goes through it."""
    # immutable: read as it lies on disk, leaving no log or index files behind and no log checkpointed.
    conn = apsw.Connection(f"{db.as_uri()}?immutable=1", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    root, page_size = conn.execute(
        "SELECT rootpage, (SELECT page_size FROM pragma_page_size) FROM sqlite_schema WHERE name = ?",
        (table,)).fetchone()
    conn.close()
    with db.open("r+b") as file:
        file.seek((root - 1) * page_size)
        file.write(random.Random(root).randbytes(page_size))
    return root


def with_unfinished_log(db: Path, folder: Path) -> Path:
    """A copy of ``db`` in ``folder`` whose write-ahead log holds a committed change, as a crash leaves it."""
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / DATABASE_FILENAME
    shutil.copyfile(db, copy)
    conn = open_store(copy)
    conn.execute("INSERT OR REPLACE INTO app_state VALUES ('written before the crash', 'yes')")
    conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)  # the log stays, as after a kill -9
    conn.close()
    assert (folder / f"{DATABASE_FILENAME}-wal").stat().st_size > 0
    return copy


def fingerprint(folder: Path) -> dict[str, str]:
    """sha256 of the database and of its write-ahead log, where there is one (an empty log is none)."""
    files = [folder / name for name in (DATABASE_FILENAME, f"{DATABASE_FILENAME}-wal")]
    return {file.name: hashlib.sha256(file.read_bytes()).hexdigest()
            for file in files if file.is_file() and (file.name == DATABASE_FILENAME or file.stat().st_size)}


def _drop_capabilities() -> None:
    # In the child, before exec: with an empty bounding set, root keeps uid 0 (its own files stay
    # readable) but gets no capability on exec, so file permissions bind it as they bind a person.
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in range(int(Path("/proc/sys/kernel/cap_last_cap").read_text()) + 1):
        if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def run_bound_by_permissions(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    """Run ``command`` so that a chmod stops it, even when the tests run as root (whom chmod does not stop)."""
    if os.geteuid() == 0:
        kwargs["preexec_fn"] = _drop_capabilities
    return subprocess.run(command, capture_output=True, text=True, timeout=180, **kwargs)
