"""Download a model file so that an interrupted download resumes and a damaged one is never used.

The bytes go to ``<dest>.part``; only after its size and sha256 check out is it renamed onto
``dest`` (atomically), so ``dest`` is either absent or the right file. A ``.part`` left by a
dropped connection, a cancel or a crash is picked up again with an HTTP ``Range`` request.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable

import httpx

from gallery_app import __version__
from gallery_app.core.errors import Cancelled, ChecksumMismatch, DownloadError

ProgressCallback = Callable[[int, int], None]  # (bytes_done, bytes_total); total is 0 if unknown
CancelCheck = Callable[[], bool]

_PROGRESS_STEP = 64 * 1024
_BACKOFF_SECONDS = 0.2
_USER_AGENT = f"gallery-app/{__version__}"
_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+|\*)", re.IGNORECASE)
_TOTAL_ONLY_RANGE = re.compile(r"bytes\s+\*/(\d+)", re.IGNORECASE)
_DISK_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}
_SERVER_HICCUPS = {500, 502, 503, 504}
_RESUME_HINT = "The download will continue where it stopped next time."


class _Interrupted(Exception):
    """The body ended early or made no sense; another attempt, resuming from disk, may finish it."""


class _ServerBusy(Exception):
    """A 5xx that CDNs send now and then and that usually goes away on the next request."""

    def __init__(self, status: int):
        super().__init__(status)
        self.status = status


# Failures worth another attempt: the connection broke after it was made.
_TRANSIENT = (
    httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError, httpx.ReadTimeout,
    httpx.WriteTimeout, httpx.PoolTimeout, _Interrupted, _ServerBusy,
)
_UNREACHABLE = (httpx.ConnectError, httpx.ConnectTimeout)


def sha256_of(path: Path, chunk_size: int = 1 << 20) -> str:
    """Lower-case hex sha256 of a file, read in chunks so big models need little memory."""
    hasher = hashlib.sha256()
    _hash_file_into(hasher, path, chunk_size)
    return hasher.hexdigest()


def _hash_file_into(hasher: "hashlib._Hash", path: Path, chunk_size: int = 1 << 20) -> int:
    size = 0
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(chunk_size), b""):
            hasher.update(block)
            size += len(block)
    return size


class _Progress:
    """Throttles reports and never lets the count go backwards (e.g. when a server restarts at 0)."""

    def __init__(self, callback: ProgressCallback | None):
        self._callback = callback
        self._last = 0

    def update(self, done: int, total: int, *, force: bool = False) -> None:
        if self._callback is None or done < self._last:
            return
        if not force and done - self._last < _PROGRESS_STEP:
            return
        self._last = done
        self._callback(done, total)

    def finish(self, size: int) -> None:
        self.update(size, size, force=True)


class _Part:
    """The ``.part`` file plus a running sha256 of exactly the bytes it holds."""

    def __init__(self, path: Path):
        self.path = path
        self.size = 0
        self.has_earlier_bytes = False  # bytes from a previous run, which may be stale
        self._hasher = hashlib.sha256()

    def rehash(self) -> None:
        self._hasher = hashlib.sha256()
        self.size = _hash_file_into(self._hasher, self.path) if self.path.is_file() else 0
        self.has_earlier_bytes = self.size > 0

    def open(self, *, append: bool) -> BinaryIO:
        if not append:
            self._forget()
        return self.path.open("ab" if append else "wb")

    def add(self, fh: BinaryIO, data: bytes) -> None:
        # Written before hashed: if the write fails the hash must not claim the bytes.
        fh.write(data)
        self._hasher.update(data)
        self.size += len(data)

    def hexdigest(self) -> str:
        return self._hasher.hexdigest()

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
        self._forget()

    def _forget(self) -> None:
        self._hasher = hashlib.sha256()
        self.size = 0
        self.has_earlier_bytes = False


@dataclass
class _Job:
    url: str
    dest: Path
    size: int | None
    sha256: str | None
    progress: _Progress
    cancel: CancelCheck
    max_attempts: int
    label: str | None = None

    @property
    def name(self) -> str:
        """What messages call the file: the caller's label (the file's name on the server, the model's
        name), else the local name, which for many models is a generic ``model.gguf``."""
        return self.label or self.dest.name


def download_file(url: str, dest: Path, *, size: int | None, sha256: str | None,
                  progress: ProgressCallback | None = None,
                  cancel: Callable[[], bool] | None = None,
                  client: httpx.Client | None = None,
                  timeout: float = 30.0, max_attempts: int = 5, label: str | None = None) -> Path:
    """Download ``url`` to ``dest``, resuming any earlier ``.part`` and verifying before the rename.

    Returns ``dest``. Raises ``Cancelled`` (the ``.part`` is kept), ``ChecksumMismatch`` (nothing
    is kept) or ``DownloadError``. ``timeout`` applies to the client created here; a given
    ``client`` keeps its own settings and is left open. ``label`` names the file in every message.
    """
    dest = Path(dest)
    job = _Job(url=url, dest=dest, size=size, sha256=sha256.lower() if sha256 else None,
               progress=_Progress(progress), cancel=cancel or (lambda: False),
               max_attempts=max(1, max_attempts), label=label)
    try:
        if _existing_dest_is_good(job):
            job.progress.finish(dest.stat().st_size)
            return dest
        dest.parent.mkdir(parents=True, exist_ok=True)
        with _client_for(client, timeout) as http:
            _download_verified(http, job)
    except OSError as exc:
        raise _disk_error(exc, job) from exc
    return dest


def _existing_dest_is_good(job: _Job) -> bool:
    """True if ``dest`` is already the right file; a wrong one is removed so it cannot be used."""
    if not job.dest.is_file():
        return False
    if _matches(job, job.dest.stat().st_size, lambda: sha256_of(job.dest)):
        return True
    job.dest.unlink()
    return False


def _matches(job: _Job, size: int, digest: Callable[[], str]) -> bool:
    if job.size is not None and size != job.size:
        return False
    return job.sha256 is None or digest() == job.sha256


@contextmanager
def _client_for(client: httpx.Client | None, timeout: float) -> Iterator[httpx.Client]:
    if client is not None:
        yield client
        return
    with httpx.Client(timeout=httpx.Timeout(timeout), follow_redirects=True,
                      headers={"User-Agent": _USER_AGENT}) as own:
        yield own


def _download_verified(http: httpx.Client, job: _Job) -> None:
    part = _Part(job.dest.with_name(job.dest.name + ".part"))
    part.rehash()
    if job.size is not None and part.size > job.size:
        part.remove()  # longer than the real file: it cannot be a prefix of it
    while True:
        if not _part_is_full_size(part, job):
            _fetch_with_retries(http, part, job)
        if _matches(job, part.size, part.hexdigest):
            _commit(part.path, job.dest)
            job.progress.finish(part.size)
            return
        # Bytes from an earlier run may come from an older version of the file or a bad
        # disk; those deserve one clean download. A clean download that fails is the server's.
        retry_from_scratch = part.has_earlier_bytes
        part.remove()
        if not retry_from_scratch:
            raise _corrupted(job)


def _part_is_full_size(part: _Part, job: _Job) -> bool:
    # Asking the server for zero bytes would only earn a 416; verify what is on disk instead.
    return job.size is not None and part.size == job.size and part.path.is_file()


def _fetch_with_retries(http: httpx.Client, part: _Part, job: _Job) -> None:
    for attempt in range(1, job.max_attempts + 1):
        _check_cancel(job)
        last_try = attempt == job.max_attempts
        try:
            _fetch_once(http, part, job)
            return
        except _UNREACHABLE as exc:
            # Unreachable on the first try means offline: say so at once rather than retry.
            if attempt == 1 or last_try:
                raise _unreachable(job) from exc
        except _TRANSIENT as exc:
            if last_try:
                raise _gave_up(exc, job) from exc
        except httpx.HTTPError as exc:
            raise DownloadError(f"Could not download {job.name} from the model server ({exc}).",
                                hint="Please try again later.") from exc
        time.sleep(_BACKOFF_SECONDS * attempt)


def _fetch_once(http: httpx.Client, part: _Part, job: _Job) -> None:
    """One GET that extends the ``.part``; returns when the server has nothing more to send."""
    headers = {"User-Agent": _USER_AGENT, "Accept-Encoding": "identity"}
    if part.size:
        headers["Range"] = f"bytes={part.size}-"
    with http.stream("GET", job.url, headers=headers, follow_redirects=True) as response:
        if response.status_code == 416:
            _accept_range_not_satisfiable(response, part, job)
            return
        _raise_for_status(response, job)
        start, total = _response_span(response, part)
        _check_advertised_size(total, part, job)
        _stream_body(response, part, start, total, job)


def _accept_range_not_satisfiable(response: httpx.Response, part: _Part, job: _Job) -> None:
    """416: the part may already be whole; verification decides, unless the server's total says no."""
    match = _TOTAL_ONLY_RANGE.fullmatch(response.headers.get("Content-Range", "").strip())
    if match is None:
        return
    total = int(match[1])
    _check_advertised_size(total, part, job)
    if total != part.size:
        part.remove()
        raise _Interrupted("416 for a part that is not the server's file")


def _response_span(response: httpx.Response, part: _Part) -> tuple[int, int]:
    """Where the body starts in the file and the file's total size (0 if unknown)."""
    length = _content_length(response)
    if response.status_code == 200:
        return 0, length or 0  # a server ignoring Range sends the whole file again
    match = _CONTENT_RANGE.fullmatch(response.headers.get("Content-Range", "").strip())
    if match is None or int(match[1]) != part.size:
        part.remove()  # cannot tell where these bytes belong; start clean next attempt
        raise _Interrupted("206 without a usable Content-Range")
    start = int(match[1])
    if match[3] != "*":
        return start, int(match[3])
    return start, start + length if length is not None else 0


def _content_length(response: httpx.Response) -> int | None:
    try:
        return int(response.headers["Content-Length"])
    except (KeyError, ValueError):
        return None


def _check_advertised_size(total: int, part: _Part, job: _Job) -> None:
    if job.size is None or not total or total == job.size:
        return
    part.remove()
    raise ChecksumMismatch(
        f"The model server offers {job.name} with a different size than expected "
        f"({total:,} bytes instead of {job.size:,}), so it was not downloaded.",
        hint="The model may have changed on the server; an app update should fix this.")


def _stream_body(response: httpx.Response, part: _Part, start: int, total: int, job: _Job) -> None:
    expected = _content_length(response)
    received = 0
    with part.open(append=start > 0) as fh:
        job.progress.update(part.size, total, force=start > 0)
        # No chunk_size: httpx would hold back a partial chunk, and a dropped connection
        # would lose bytes that had already arrived.
        for chunk in response.iter_raw():
            part.add(fh, chunk)
            received += len(chunk)
            if job.size is not None and part.size > job.size:
                # A body without a length (chunked) may never end: it would fill the disk.
                part.remove()
                raise ChecksumMismatch(
                    f"The model server sent more than the {job.size:,} bytes {job.name} has, so it was not "
                    "downloaded.", hint="The server may be misconfigured; try again later or choose a local file.")
            job.progress.update(part.size, total)
            _check_cancel(job)
    if expected is not None and received < expected:
        raise _Interrupted(f"got {received} of {expected} bytes")


def _check_cancel(job: _Job) -> None:
    if job.cancel():
        raise Cancelled(f"The download of {job.name} was cancelled.", hint=_RESUME_HINT)


def _raise_for_status(response: httpx.Response, job: _Job) -> None:
    status = response.status_code
    if status in (200, 206):
        return
    if status in _SERVER_HICCUPS:
        raise _ServerBusy(status)
    if status == 404:
        raise DownloadError(f"The file {job.name} was not found on the model server ({job.url}).",
                            hint="The model may have been moved or removed; an app update should fix this.")
    raise _http_status_error(status, job)


def _http_status_error(status: int, job: _Job) -> DownloadError:
    return DownloadError(f"The model server refused to send {job.name} (HTTP error {status}).",
                         hint="Please try again later.")


def _commit(part_path: Path, dest: Path) -> None:
    # The data must be on disk before the rename is, or a crash could leave a hollow dest.
    with part_path.open("r+b") as fh:
        os.fsync(fh.fileno())
    os.replace(part_path, dest)
    _fsync_directory(dest.parent)


def _fsync_directory(folder: Path) -> None:
    if os.name != "posix":
        return  # Windows cannot open a directory for fsync; NTFS journals the rename itself.
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:
        pass  # Some file systems refuse directory fsync; the rename is still atomic.
    finally:
        os.close(fd)


def _corrupted(job: _Job) -> ChecksumMismatch:
    return ChecksumMismatch(f"The downloaded file {job.name} was corrupted in transit and has been removed.",
                            hint="Please try the download again.")


def _unreachable(job: _Job) -> DownloadError:
    return DownloadError(f"Could not reach the model server to download {job.name}.",
                         hint="Check your internet connection and try again. " + _RESUME_HINT)


def _gave_up(exc: BaseException, job: _Job) -> DownloadError:
    if isinstance(exc, _ServerBusy):
        return _http_status_error(exc.status, job)
    return DownloadError(f"The download of {job.name} kept being interrupted.",
                         hint="Check your internet connection and try again. " + _RESUME_HINT)


def _disk_error(exc: OSError, job: _Job) -> DownloadError:
    folder = job.dest.parent
    if exc.errno in _DISK_FULL:
        return DownloadError(f"The disk is full: there is not enough free space in {folder} "
                             f"to download {job.name}.",
                             hint="Free up some space and try again. " + _RESUME_HINT)
    return DownloadError(f"Could not save {job.name} in {folder} ({exc.strerror or exc}).",
                         hint="Check that the folder exists and that you are allowed to write to it.")


__all__ = ["CancelCheck", "ProgressCallback", "download_file", "sha256_of"]
