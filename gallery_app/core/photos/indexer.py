"""Adding photos to the gallery: scan, prepare on a thread pool, embed, store in batches.

Workers read, hash, decode and pre-process files ahead of the model, at most ``lookahead`` files
in flight, while the calling thread runs the vision model and writes; so neither waits on the
other and memory stays bounded. Each batch (rows, vectors) is one transaction: a crash or a
cancel loses at most the batch in progress, and re-running picks up where it stopped.

Re-running on a folder is incremental: a file whose size and modification time are unchanged
is not read again; a renamed or moved file is recognised by its content hash and keeps its row
(and vector); a copy reuses the vector; a file that disappeared is removed from the gallery.
"""

from __future__ import annotations

import os
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import apsw
import numpy as np

from gallery_app.core import paths
from gallery_app.core.errors import AppError
from gallery_app.core.models.runtimes.clip import ClipVisionEncoder
from gallery_app.core.photos import library
from gallery_app.core.photos.decode import PhotoSkipped
from gallery_app.core.file_names import printable
from gallery_app.core.photos.library import PhotoRecord, PhotoSource
from gallery_app.core.photos.photo_vectors import (
    delete_photo_vectors, photos_without_vectors, refresh_timeline, refresh_vector_metadata, store_photo_vectors,
    stored_vectors, vector_rowids,
)
from gallery_app.core.photos.preparing import PreparedPhoto, is_photo_file, prepare_photo
from gallery_app.core.photos.thumbnails import remove_stale_temporaries
from gallery_app.core.store import atomic
from gallery_app.core.store.connection import refuse_if_damaged

#: (stage, done, total); stages "scanning", "indexing", "removing".
IndexProgress = Callable[[str, int, int], None]
BATCH_SIZE = 32


@dataclass
class IndexSummary:
    folder: Path | None = None
    found: int = 0
    added: int = 0
    updated: int = 0
    moved: int = 0
    unchanged: int = 0
    removed: int = 0
    embedded: int = 0
    without_vectors: int = 0
    skipped: list[PhotoSkipped] = field(default_factory=list)
    cancelled: bool = False
    seconds: float = 0.0
    photo_ids: list[int] = field(default_factory=list)
    #: The row each stored file ended up as (its resolved path → photo id).
    ids_by_path: dict[str, int] = field(default_factory=dict)
    #: Chat copies whose content another import had just added: they joined that row (copy removed).
    joined: set[str] = field(default_factory=set)

    def skip_reasons(self) -> Counter[str]:
        return Counter(skip.reason for skip in self.skipped)

    def describe(self) -> str:
        where = f" in {printable(self.folder)}" if self.folder else ""
        parts = [f"{self.found} photos found{where}", f"{self.added} added"]
        for count, label in ((self.updated, "changed"), (self.moved, "moved or renamed"),
                             (self.unchanged, "unchanged"), (self.removed, "removed (no longer there)")):
            if count:
                parts.append(f"{count} {label}")
        reasons = self.skip_reasons()
        if reasons:
            parts.append(f"{len(self.skipped)} skipped (" + ", ".join(f"{n} {r}" for r, n in reasons.most_common()) + ")")
        text = ", ".join(parts) + "."
        if self.without_vectors:
            text += f" {self.without_vectors} photos wait for the CLIP model before they can be searched."
        if self.cancelled:
            text = "Stopped early; everything added so far is kept. " + text
        return text


def scan_folder(folder: Path) -> Iterator[Path]:
    """Photo files under ``folder``, recursively, in a stable order; hidden files and folders left out."""
    for root, dirs, files in os.walk(folder, onerror=None, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            path = Path(root) / name
            if is_photo_file(path):
                yield path


class PhotoIndexer:
    def __init__(self, conn: apsw.Connection, vision: ClipVisionEncoder | None, *, workers: int | None = None,
                 batch_size: int = BATCH_SIZE, lookahead: int | None = None,
                 progress: IndexProgress | None = None, cancel: Callable[[], bool] | None = None):
        self.conn = conn
        self.vision = vision
        self.workers = workers or max(1, min(4, os.cpu_count() or 1))
        self.batch_size = batch_size
        self.lookahead = lookahead or 2 * batch_size
        self.progress = progress or (lambda stage, done, total: None)
        self.cancel = cancel or (lambda: False)

    # --- entry points ---------------------------------------------------------------------------

    def add_folder(self, folder: Path | str) -> IndexSummary:
        started = time.perf_counter()
        folder = Path(folder).expanduser().resolve()
        if not folder.is_dir():
            raise AppError(f"{printable(folder)} is not a folder.", hint="Choose a folder that holds photos.")
        summary = IndexSummary(folder=folder)
        remove_stale_temporaries()
        refuse_if_damaged(self.conn)
        with atomic(self.conn):
            folder_id = library.ensure_folder(self.conn, folder)
        known = library.photos_in_folder(self.conn, folder_id)
        self.progress("scanning", 0, 0)
        on_disk = list(scan_folder(folder))
        summary.found = len(on_disk)
        todo = []
        for path in on_disk:
            record = known.get(str(path))
            if record is not None and _unchanged(record, path):
                summary.unchanged += 1
            else:
                todo.append(path)
        self._index(todo, PhotoSource.FOLDER, folder_id, summary)
        if not summary.cancelled:
            present = {str(p) for p in on_disk}
            gone = [r.id for r in library.photos_in_folder(self.conn, folder_id).values() if r.path not in present]
            self.progress("removing", 0, len(gone))
            with atomic(self.conn):
                self._delete(gone)
                library.mark_folder_scanned(self.conn, folder_id)
            summary.removed = len(gone)
        summary.seconds = time.perf_counter() - started
        return summary

    def add_files(self, paths: Iterable[Path | str], source: PhotoSource, *, folder_id: int | None = None) -> IndexSummary:
        """Index single files (uploads, captures) that belong to no scanned folder."""
        started = time.perf_counter()
        summary = IndexSummary()
        todo = [Path(p).expanduser().resolve() for p in paths]
        summary.found = len(todo)
        self._index(todo, source, folder_id, summary)
        summary.seconds = time.perf_counter() - started
        return summary

    def embed_missing(self) -> int:
        """Compute vectors for photos stored while no CLIP model was available; returns how many."""
        if self.vision is None:
            return 0
        waiting = photos_without_vectors(self.conn, self.vision)
        summary = IndexSummary()
        by_path = {Path(r.path): r for r in waiting}
        for prepared_batch in self._prepared_batches(list(by_path), frozenset(), summary):
            prepared_batch = [p for p in prepared_batch if p.pixel_values is not None]
            vectors = self._embed([p.pixel_values for p in prepared_batch])
            with atomic(self.conn):
                store_photo_vectors(self.conn, self.vision, [by_path[p.path] for p in prepared_batch], vectors)
            summary.embedded += len(prepared_batch)
        return summary.embedded

    # --- the pipeline ---------------------------------------------------------------------------

    def _index(self, paths: list[Path], source: PhotoSource, folder_id: int | None, summary: IndexSummary) -> None:
        indexed_hashes = self._hashes_with_vectors()
        for batch in self._prepared_batches(paths, indexed_hashes, summary):
            self._store_batch(batch, source, folder_id, summary)
            self.progress("indexing", summary.added + summary.updated + summary.moved + len(summary.skipped), len(paths))
        if self.vision is not None:
            summary.without_vectors = len(photos_without_vectors(self.conn, self.vision))

    def _hashes_with_vectors(self) -> frozenset[str]:
        if self.vision is None:
            return frozenset()
        with_vectors = vector_rowids(self.conn, self.vision)
        rows = self.conn.execute("SELECT id, content_hash FROM photos")
        return frozenset(digest for photo_id, digest in rows if photo_id in with_vectors)

    def _prepared_batches(self, paths: list[Path], known: frozenset[str],
                          summary: IndexSummary) -> Iterator[list[PreparedPhoto]]:
        """Prepared photos in file order, ``batch_size`` at a time, with at most ``lookahead`` in flight."""
        pending: deque[Future[PreparedPhoto]] = deque()
        remaining = iter(paths)
        batch: list[PreparedPhoto] = []
        with ThreadPoolExecutor(self.workers, thread_name_prefix="photo-prepare") as pool:
            try:
                while True:
                    while len(pending) < self.lookahead:
                        path = next(remaining, None)
                        if path is None:
                            break
                        pending.append(pool.submit(prepare_photo, path, known_hashes=known))
                    if not pending:
                        break
                    if self.cancel():
                        summary.cancelled = True
                        return
                    batch.append(pending.popleft().result())
                    if len(batch) >= self.batch_size:
                        yield batch
                        batch = []
                if batch and not self.cancel():
                    yield batch
                elif batch:
                    summary.cancelled = True
            finally:
                for future in pending:
                    future.cancel()

    def _embed(self, pixel_values: list[np.ndarray]) -> np.ndarray:
        if not pixel_values:
            return np.zeros((0, self.vision.dims), np.float32)
        return self.vision.embed_pixels(np.stack(pixel_values))

    def _store_batch(self, batch: list[PreparedPhoto], source: PhotoSource, folder_id: int | None,
                     summary: IndexSummary) -> None:
        good = []
        for prepared in batch:
            if prepared.skipped is not None:
                summary.skipped.append(prepared.skipped)
            else:
                good.append(prepared)
        to_embed = [p for p in good if p.pixel_values is not None]
        # The model runs before the transaction opens, so the database is never locked while it thinks.
        vectors = self._embed([p.pixel_values for p in to_embed]) if self.vision is not None else None
        adopted: list[PhotoRecord] = []
        joined: list[Path] = []
        with atomic(self.conn):
            # Read under the write lock: another import adding the same photo (a chat export's copy while
            # its extracted folder is added) commits before this (and is seen here) or after (and sees this).
            same_content = library.photos_with_hashes(self.conn, [p.content_hash for p in good])
            new_records: list[PhotoRecord] = []
            stored_ids = []
            for prepared in good:
                photo_id = self._join_twin(prepared, source, same_content)
                if photo_id is not None:
                    joined.append(prepared.path)
                    summary.joined.add(str(prepared.path))
                else:
                    photo_id = self._adopt_chat_copy(prepared, source, folder_id, same_content, adopted)
                    if photo_id is not None:
                        summary.added += 1
                    else:
                        photo_id = self._store_one(prepared, source, folder_id, same_content, summary)
                    if prepared.pixel_values is not None:
                        new_records.append(library.photo_by_id(self.conn, photo_id))
                summary.photo_ids.append(photo_id)
                summary.ids_by_path[str(prepared.path)] = photo_id
                stored_ids.append(photo_id)
            if vectors is not None and new_records:
                store_photo_vectors(self.conn, self.vision, new_records, vectors)
                summary.embedded += len(new_records)
            # A moved or changed file may have a new file time, the timeline's last resort.
            refresh_timeline(self.conn, stored_ids)
            refresh_vector_metadata(self.conn, [copy.id for copy in adopted])
        chats_folder = paths.library_dir("chats").resolve()
        for copy in [*(Path(c.path) for c in adopted), *joined]:
            if copy.resolve().is_relative_to(chats_folder):
                copy.unlink(missing_ok=True)

    @staticmethod
    def _join_twin(prepared: PreparedPhoto, source: PhotoSource,
                   same_content: dict[str, list[PhotoRecord]]) -> int | None:
        """A chat's copy of a photo the gallery already has (added since the chat import looked) is that
        photo: its row's id, so the message links to it, and no second row. Returns None otherwise."""
        if source is not PhotoSource.CHAT:
            return None
        return next((t.id for t in same_content.get(prepared.content_hash, []) if t.path != str(prepared.path)), None)

    def _adopt_chat_copy(self, prepared: PreparedPhoto, source: PhotoSource, folder_id: int | None,
                         same_content: dict[str, list[PhotoRecord]], adopted: list[PhotoRecord]) -> int | None:
        """A folder's file whose content the app copied out of a chat export before takes that copy's place:
        the same row, so the chat keeps its link and the photo its vector, and the copy is removed (after the
        commit). Otherwise the gallery would show the photo twice. Returns the row's id, or None."""
        if source is not PhotoSource.FOLDER:
            return None
        copy = next((t for t in same_content.get(prepared.content_hash, []) if t.source == PhotoSource.CHAT.value
                     and t not in adopted), None)
        # The lookup by path only once a chat copy is there: not one more query per file of every folder.
        if copy is None or library.photo_by_path(self.conn, prepared.path) is not None:
            return None
        library.update_photo(self.conn, copy.id, {"path": str(prepared.path), "folder_id": folder_id,
                                                  "source": source.value, "mtime_ns": prepared.mtime_ns})
        adopted.append(copy)
        return copy.id

    def _store_one(self, prepared: PreparedPhoto, source: PhotoSource, folder_id: int | None,
                   same_content: dict[str, list[PhotoRecord]], summary: IndexSummary) -> int:
        at_path = library.photo_by_path(self.conn, prepared.path)
        if prepared.pixel_values is None:
            twins = same_content.get(prepared.content_hash, [])
            if at_path is not None and at_path.content_hash == prepared.content_hash:
                # Touched but not changed (copied back, metadata-only sync): only the time moves.
                library.move_photo(self.conn, at_path.id, path=at_path.path, folder_id=at_path.folder_id,
                                   mtime_ns=prepared.mtime_ns)
                summary.unchanged += 1
                return at_path.id
            vanished = next((t for t in twins if not Path(t.path).exists()), None)
            if vanished is not None and at_path is None:
                library.move_photo(self.conn, vanished.id, path=str(prepared.path), folder_id=folder_id,
                                   mtime_ns=prepared.mtime_ns)
                summary.moved += 1
                return vanished.id
            vectors = stored_vectors(self.conn, self.vision, [t.id for t in twins])
            twin = next(t for t in twins if t.id in vectors)
            copy = {**prepared.row_values(), "width": twin.width, "height": twin.height, "format": twin.format,
                    "captured_at": twin.captured_at, "latitude": twin.latitude, "longitude": twin.longitude,
                    "camera": twin.camera, "perceptual_hash": twin.perceptual_hash}
            photo_id = self._write_row(at_path, copy, source, folder_id, summary)
            store_photo_vectors(self.conn, self.vision, [library.photo_by_id(self.conn, photo_id)],
                                vectors[twin.id][None, :])
            return photo_id
        return self._write_row(at_path, prepared.row_values(), source, folder_id, summary)

    def _write_row(self, at_path: PhotoRecord | None, values: dict, source: PhotoSource, folder_id: int | None,
                   summary: IndexSummary) -> int:
        values = {**values, "source": source.value, "folder_id": folder_id}
        if at_path is None:
            summary.added += 1
            return library.insert_photo(self.conn, values)
        # The file at this path changed: same row (the grid keeps its place), new content.
        summary.updated += 1
        library.update_photo(self.conn, at_path.id, values)
        return at_path.id

    def _delete(self, ids: list[int]) -> None:
        delete_photo_vectors(self.conn, ids)
        library.delete_photos(self.conn, ids)


def _unchanged(record: PhotoRecord, path: Path) -> bool:
    try:
        stat = path.stat()
    except OSError:
        return False
    return stat.st_size == record.file_size and stat.st_mtime_ns == record.mtime_ns
