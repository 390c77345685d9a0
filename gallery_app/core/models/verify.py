"""Checking model files against their spec, with a cache so big files are hashed once.

Hashing a 400 MB model takes seconds; the app checks on every start, so a file whose
size and modification time are unchanged since its last full hash keeps its verdict.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from gallery_app.core.json_file import read_json, write_json
from gallery_app.core.models.download import sha256_of
from gallery_app.core.models.specs import ModelFile

CACHE_FILENAME = "verified.json"
_cache_lock = threading.Lock()


class CheckStatus(str, Enum):
    VERIFIED = "verified"
    NO_CHECKSUM = "no published checksum"
    MISSING = "missing"
    WRONG_SIZE = "wrong size"
    WRONG_CHECKSUM = "checksum mismatch"

    @property
    def ok(self) -> bool:
        return self in (CheckStatus.VERIFIED, CheckStatus.NO_CHECKSUM)


@dataclass(frozen=True)
class FileCheck:
    path: Path
    status: CheckStatus
    detail: str = ""


def _cache_path(cache_dir: Path) -> Path:
    return cache_dir / CACHE_FILENAME


def _load_cache(cache_dir: Path) -> dict[str, dict]:
    return read_json(_cache_path(cache_dir))


def _save_cache(cache_dir: Path, cache: dict[str, dict]) -> None:
    try:
        write_json(_cache_path(cache_dir), cache)
    except OSError:
        pass  # The cache only saves time; failing to write it must not fail the check.


def check_file(path: Path, expected: ModelFile, *, cache_dir: Path | None = None, full: bool = False) -> FileCheck:
    """Compare ``path`` with the spec: size always, sha256 unless a cached verdict still holds."""
    try:
        stat = path.stat()
    except OSError:
        return FileCheck(path, CheckStatus.MISSING, f"{path} does not exist")
    if expected.size is not None and stat.st_size != expected.size:
        return FileCheck(path, CheckStatus.WRONG_SIZE,
                         f"{path.name} is {stat.st_size:,} bytes, expected {expected.size:,}")
    if not expected.sha256:
        return FileCheck(path, CheckStatus.NO_CHECKSUM, "size matches; no sha256 is published")
    fingerprint = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": expected.sha256.lower()}
    key = str(path.resolve())
    if cache_dir is not None and not full:
        with _cache_lock:
            if _load_cache(cache_dir).get(key) == fingerprint:
                return FileCheck(path, CheckStatus.VERIFIED, "sha256 verified earlier; file unchanged since")
    actual = sha256_of(path)
    if actual != expected.sha256.lower():
        return FileCheck(path, CheckStatus.WRONG_CHECKSUM,
                         f"{path.name} has sha256 {actual[:12]}…, expected {expected.sha256[:12]}…")
    if cache_dir is not None:
        with _cache_lock:
            cache = _load_cache(cache_dir)
            cache[key] = fingerprint
            _save_cache(cache_dir, cache)
    return FileCheck(path, CheckStatus.VERIFIED, "sha256 verified")
