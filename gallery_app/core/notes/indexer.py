"""Indexing a notes folder: scan → read and load on worker threads → chunk → embed in batches → a
transaction per file.

Re-running on a folder is incremental, as the photo indexer is: a file whose size and modification
time are unchanged is not read; one whose content hash is unchanged is only re-stamped; a renamed or
moved file (the hash of a row whose path is gone) keeps its row, chunks and vectors; a changed file is
chunked and embedded again, alone; a file that disappeared is removed with its chunks and vectors.

Each file is committed in its own transaction, with its chunks and their vectors, so a killed or
stopped run keeps every file it finished and the next run does the rest: the same rows as a run never
interrupted. The embedder sees batches of ``EMBED_BATCH`` chunks across files (a batch of one small
note's two chunks would leave a core idle), and files are read and loaded (PDFs parsed) on worker
threads ahead of it. Chunking runs on the calling thread: it counts with the embedder's tokenizer,
which must not be used from two threads at once.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISREG

import apsw
import numpy as np

from gallery_app.core.errors import AppError
from gallery_app.core.file_names import printable
from gallery_app.core.models.runtimes.embedders import TextEmbedder
from gallery_app.core.notes import repository
from gallery_app.core.notes.chunking import NoteChunk, NoteChunker, NoteChunkingConfig
from gallery_app.core.notes.documents import NoteDocument, NoteSkipped
from gallery_app.core.notes.repository import FileValues, KindTotals, StoredFile
from gallery_app.core.units import describe_size

log = logging.getLogger(__name__)

#: (stage, done, total); stages "scanning", "indexing" (files), "embedding" (chunks left from an earlier embedder).
IndexProgress = Callable[[str, int, int], None]
#: A file's contents, read and decoded, or the reason it is not indexed.
Loader = Callable[..., list[NoteDocument]]
EMBED_BATCH = 32
#: Files read and loaded ahead of the embedder, at most.
LOOKAHEAD = 32
LOAD_WORKERS = 2
LOOKAHEAD_BYTES = 64 * 1000 * 1000
#: Names that are not notes however they end: Office's lock files ("~$Report.docx") and editors' swap files.
_IGNORED_PREFIXES = ("~$", ".~lock.")


@dataclass
class NotesIndexSummary:
    folder: Path
    found: int = 0
    added: int = 0
    changed: int = 0
    renamed: int = 0
    unchanged: int = 0
    removed: int = 0
    #: Chunks embedded in this run (new and changed files, and chunks an earlier embedder left).
    embedded: int = 0
    #: The folder's indexed files per kind after the run ("markdown", "text", "jsonl", "pdf", "docx").
    kinds: dict[str, KindTotals] = field(default_factory=dict)
    #: (relative path, reason) of every file of the folder that is not indexed, after the run.
    skipped: list[tuple[str, str]] = field(default_factory=list)
    #: (relative path, what was left out) of the folder's files indexed in part ("line 12: not JSON").
    problems: list[tuple[str, str]] = field(default_factory=list)
    cancelled: bool = False
    seconds: float = 0.0

    @property
    def files(self) -> int:
        return sum(totals.files for totals in self.kinds.values())

    @property
    def chunks(self) -> int:
        return sum(totals.chunks for totals in self.kinds.values())

    @property
    def pages(self) -> int:
        return sum(totals.pages for totals in self.kinds.values())

    def skip_reasons(self) -> Counter[str]:
        return Counter(reason for _path, reason in self.skipped)

    def describe(self) -> str:
        """"412 notes, 3 PDFs (29 pages), 1 Word file in ~/Notes (12 added, 400 unchanged); 2 skipped: …"."""
        head = f"{describe_kinds(self.kinds)} in {printable(self.folder)}"
        changes = [f"{count:,} {label}" for count, label in (
            (self.added, "added"), (self.changed, "changed"), (self.renamed, "renamed or moved"),
            (self.removed, "removed (no longer there)"), (self.unchanged, "unchanged")) if count]
        text = head + (f" ({', '.join(changes)})" if changes else "")
        if self.skipped:
            text += f"; {len(self.skipped):,} skipped: {describe_reasons(self.skip_reasons())}"
        if self.problems:
            by_file: dict[str, list[str]] = {}
            for path, problem in self.problems:
                by_file.setdefault(path, []).append(problem)
            shown = [f"{printable(path)} ({'; '.join(problems)})" for path, problems in list(by_file.items())[:3]]
            text += (f"; {_plural(len(by_file), 'file', 'files')} indexed without what could not be read: "
                     + ", ".join(shown) + (", …" if len(by_file) > 3 else ""))
        text += "."
        if self.cancelled:
            text = "Stopped early; every file finished so far is kept. " + text
        return text


def _plural(count: int, one: str, many: str) -> str:
    return f"{count:,} {one if count == 1 else many}"


def describe_kinds(kinds: dict[str, KindTotals]) -> str:
    """"412 notes, 1 JSONL file (51 notes), 3 PDFs (29 pages), 1 Word file" (or "no notes")."""
    empty = KindTotals()
    notes = kinds.get("markdown", empty).files + kinds.get("text", empty).files
    parts = [_plural(notes, "note", "notes")] if notes else []
    if (jsonl := kinds.get("jsonl")) is not None:
        parts.append(_plural(jsonl.files, "JSONL file", "JSONL files") + f" ({_plural(jsonl.documents, 'note', 'notes')})")
    if (pdf := kinds.get("pdf")) is not None:
        parts.append(_plural(pdf.files, "PDF", "PDFs") + (f" ({_plural(pdf.pages, 'page', 'pages')})" if pdf.pages else ""))
    if (docx := kinds.get("docx")) is not None:
        parts.append(_plural(docx.files, "Word file", "Word files"))
    others = sum(totals.files for kind, totals in kinds.items() if kind not in ("markdown", "text", "jsonl", "pdf", "docx"))
    if others:
        parts.append(_plural(others, "other file", "other files"))
    return ", ".join(parts) or "no notes"


def describe_reasons(reasons: Counter[str], shown: int = 6) -> str:
    """"2 scanned PDF without a text layer, password-protected PDF": the commonest reasons first."""
    said = ", ".join(f"{n} {reason}" if n > 1 else reason for reason, n in reasons.most_common(shown))
    rest = len(reasons) - shown
    return said + (f" and {_plural(rest, 'other reason', 'other reasons')}" if rest > 0 else "")


@dataclass
class _Seen:
    """A file found by the scan, with its stat from before it was read."""

    relative: str
    path: Path
    size: int
    mtime_ns: int

    def values(self, content_hash: str | None, **more) -> FileValues:
        return FileValues(self.relative, self.size, self.mtime_ns, content_hash, **more)


@dataclass
class _Prepared:
    seen: _Seen
    content_hash: str | None = None
    documents: list[NoteDocument] | None = None
    #: Why the file is not indexed, or None.
    skipped: str | None = None


def _ignored(name: str) -> bool:
    return name.startswith(".") or name.startswith(_IGNORED_PREFIXES) or name.endswith("~")


def scan_folder(folder: Path, unreadable: list[_Seen]) -> Iterator[_Seen]:
    """Files under ``folder`` in a stable order; hidden files and folders (``.obsidian``, ``.git``) left out.

    Linked folders are followed, each real folder entered once, so a link to a parent is no loop. A file
    that cannot even be looked at (a link to nothing, a link loop) goes into ``unreadable``."""
    visited: set[tuple[int, int]] = set()
    for root, dirs, files in os.walk(folder, followlinks=True):
        try:
            identity = os.stat(root)
        except OSError:
            dirs[:] = []
            continue
        if (identity.st_dev, identity.st_ino) in visited:
            dirs[:] = []
            continue
        visited.add((identity.st_dev, identity.st_ino))
        dirs[:] = sorted(d for d in dirs if not _ignored(d))
        for name in sorted(files):
            if _ignored(name):
                continue
            path = Path(root) / name
            relative = os.path.relpath(path, folder)
            try:
                stat = path.stat()
            except OSError:
                unreadable.append(_Seen(relative, path, 0, 0))
                continue
            if not S_ISREG(stat.st_mode):
                continue  # a socket, a device, a pipe
            yield _Seen(relative, path, stat.st_size, stat.st_mtime_ns)


@dataclass
class _Loaded:
    """A loaded file's chunks and, as batches come back from the embedder, their vectors."""

    prepared: _Prepared
    chunks: list[NoteChunk]
    vectors: list[np.ndarray] = field(default_factory=list)

    @property
    def embedded(self) -> bool:
        return len(self.vectors) == len(self.chunks)


class NotesIndexer:
    def __init__(self, conn: apsw.Connection, embedder: TextEmbedder, *, progress: IndexProgress | None = None,
                 cancel: Callable[[], bool] | None = None, load: Loader | None = None,
                 supported: Iterable[str] | None = None, config: NoteChunkingConfig = NoteChunkingConfig(),
                 max_bytes: int | None = None, batch_size: int = EMBED_BATCH):
        self.conn = conn
        self.embedder = embedder
        self.progress = progress or (lambda stage, done, total: None)
        self.cancel = cancel or (lambda: False)
        if load is None or supported is None or max_bytes is None:
            # Imported here: the PDF and Word readers are only needed once a folder is indexed.
            from gallery_app.core.notes import loaders

            load = load or loaders.load_file
            supported = supported if supported is not None else loaders.SUPPORTED_EXTENSIONS
            max_bytes = max_bytes if max_bytes is not None else loaders.MAX_NOTE_BYTES
        self.load = load
        self.supported = frozenset(extension.lower() for extension in supported)
        self.chunker = NoteChunker(embedder.count_tokens, max_tokens=embedder.max_tokens, config=config)
        self.max_bytes = max_bytes
        self.batch_size = batch_size

    # --- the entry point ------------------------------------------------------------------------
    def index_folder(self, folder: Path | str) -> NotesIndexSummary:
        started = time.perf_counter()
        folder = self._checked_folder(folder)
        summary = NotesIndexSummary(folder=folder)
        repository.ensure_note_table(self.conn, self.embedder)  # a table that disagrees is refused before any write
        folder_id = repository.ensure_folder(self.conn, folder)
        known = repository.files_in_folder(self.conn, folder_id)
        self.progress("scanning", 0, 0)
        unreadable: list[_Seen] = []
        on_disk = list(scan_folder(folder, unreadable))
        summary.found = len(on_disk) + len(unreadable)
        present = {seen.relative for seen in on_disk + unreadable}
        unread = [(seen, self._reason_without_reading(seen, "cannot be read")) for seen in unreadable]

        todo: list[_Seen] = []
        for seen in on_disk:
            stored = known.get(seen.relative)
            reason = self._refused_unread(seen)
            if reason is not None:
                unread.append((seen, reason))
            elif stored is not None and stored.content_hash is not None and _same_stat(stored, seen):
                summary.unchanged += 1
            else:
                todo.append(seen)
        self._save_unread(folder_id, known, unread, summary)

        # Rows whose file is gone: a file met with one of their hashes was renamed or moved.
        vanished: dict[str, list[StoredFile]] = {}
        for stored in known.values():
            if stored.relative_path not in present and stored.content_hash:
                vanished.setdefault(stored.content_hash, []).append(stored)
        moved: set[int] = set()
        self._index(folder_id, todo, known, vanished, moved, summary)
        if not summary.cancelled:
            gone = [stored.id for stored in known.values() if stored.relative_path not in present and stored.id not in moved]
            repository.delete_files(self.conn, gone)
            summary.removed = len(gone)
            summary.embedded += embed_missing(self.conn, self.embedder, folder_id, progress=self.progress,
                                              cancel=self.cancel, on_cancel=lambda: setattr(summary, "cancelled", True),
                                              batch_size=self.batch_size)
        if not summary.cancelled:
            repository.mark_folder_scanned(self.conn, folder_id)
        summary.kinds = repository.kind_totals(self.conn, folder_id)
        summary.skipped = [(stored.relative_path, stored.skip_reason or "")
                           for stored in repository.skipped_files(self.conn, folder_id)]
        summary.problems = [(stored.relative_path, problem)
                            for stored in repository.files_with_problems(self.conn, folder_id) for problem in stored.problems]
        summary.seconds = time.perf_counter() - started
        return summary

    def _checked_folder(self, folder: Path | str) -> Path:
        raw = Path(folder).expanduser()
        if not raw.exists():
            raise AppError(f"{printable(raw)} does not exist.", hint="Choose a folder that holds your notes.")
        folder = raw.resolve()
        if not folder.is_dir():
            raise AppError(f"{printable(folder)} is a file, not a folder.", hint="Choose the folder that holds it.")
        if not os.access(folder, os.R_OK | os.X_OK):
            raise AppError(f"{printable(folder)} cannot be read (permission denied).")
        for other in repository.list_folders(self.conn):
            if other.path != folder and folder.is_relative_to(other.path):
                raise AppError(f"{printable(folder)} is inside the notes folder {printable(other.path)}, which is "
                               "indexed with everything in it.", hint=f"Add {printable(other.path)} again to rescan it.")
            if other.path != folder and other.path.is_relative_to(folder):
                raise AppError(f"The notes folder {printable(other.path)} is inside {printable(folder)}: its notes "
                               "would be indexed twice.", hint=f"Remove {printable(other.path)} first.")
        return folder

    # --- files refused before they are read -----------------------------------------------------
    def _refused_unread(self, seen: _Seen) -> str | None:
        """Why a file is not read at all (a type no loader reads, too large), or None. Decided again at every
        scan from its name and size alone, so a type a newer version reads is read then."""
        extension = seen.path.suffix.lower()
        if extension not in self.supported:
            return self._reason_without_reading(seen, f"unknown file type {extension or '(no extension)'}")
        if seen.size > self.max_bytes:
            return self._reason_without_reading(seen, f"too large: over the {describe_size(self.max_bytes)} limit")
        return None

    def _reason_without_reading(self, seen: _Seen, fallback: str) -> str:
        """The loader's own words for a file it refuses by its name or stat (it reads nothing then)."""
        try:
            self.load(seen.path, max_bytes=self.max_bytes)
        except NoteSkipped as skip:
            return skip.reason
        except Exception:  # noqa: BLE001 - the fallback says it
            pass
        return fallback

    def _save_unread(self, folder_id: int, known: dict[str, StoredFile], unread: list[tuple[_Seen, str]],
                     summary: NotesIndexSummary) -> None:
        changed = []
        for seen, reason in unread:
            stored = known.get(seen.relative)
            if stored is not None and stored.skip_reason == reason and stored.content_hash is None:
                summary.unchanged += 1
                continue
            if stored is not None:
                summary.changed += 1
            changed.append((seen.values(None), reason))
        repository.save_unread_files(self.conn, folder_id, changed)

    # --- the pipeline ---------------------------------------------------------------------------
    def _index(self, folder_id: int, todo: list[_Seen], known: dict[str, StoredFile],
               vanished: dict[str, list[StoredFile]], moved: set[int], summary: NotesIndexSummary) -> None:
        waiting: deque[_Loaded] = deque()  # in file order; committed once every chunk has its vector
        queue: deque[tuple[_Loaded, NoteChunk]] = deque()  # chunks still to embed
        done = 0

        def commit_ready() -> None:
            nonlocal done
            while waiting and waiting[0].embedded:
                loaded = waiting.popleft()
                self._save_loaded(folder_id, known, loaded, summary)
                done += 1
                self.progress("indexing", done, len(todo))

        def embed(count: int) -> None:
            batch = [queue.popleft() for _ in range(count)]
            rows = self.embedder.embed_passages([chunk.embedded for _loaded, chunk in batch])
            for (loaded, _chunk), row in zip(batch, rows):
                loaded.vectors.append(row)
            commit_ready()

        for prepared in self._prepared(todo, known, frozenset(vanished)):
            if self.cancel():
                summary.cancelled = True
                return
            if self._settled_without_chunks(folder_id, known, prepared, vanished, moved, summary):
                done += 1
                self.progress("indexing", done, len(todo))
                continue
            chunks = self.chunker.chunk_file(prepared.documents or [])
            if not chunks:
                prepared.skipped = "no text to index"
            loaded = _Loaded(prepared, chunks)
            waiting.append(loaded)
            queue.extend((loaded, chunk) for chunk in chunks)
            while len(queue) >= self.batch_size:
                if self.cancel():
                    summary.cancelled = True
                    return
                embed(self.batch_size)
            commit_ready()
        while queue:
            if self.cancel():
                summary.cancelled = True
                return
            embed(min(len(queue), self.batch_size))
        commit_ready()

    def _prepared(self, todo: list[_Seen], known: dict[str, StoredFile],
                  vanished_hashes: frozenset[str]) -> Iterator[_Prepared]:
        """Each file read, hashed and (unless only its stat or path changed) loaded, in scan order, on worker
        threads at most ``LOOKAHEAD`` files (and ``LOOKAHEAD_BYTES``) ahead of the caller."""
        pending: deque[tuple[Future[_Prepared], int]] = deque()
        remaining = deque(todo)
        with ThreadPoolExecutor(LOAD_WORKERS, thread_name_prefix="notes-load") as pool:
            try:
                while True:
                    in_flight = sum(size for _future, size in pending)
                    while remaining and (not pending or (len(pending) < LOOKAHEAD
                                                         and in_flight + remaining[0].size <= LOOKAHEAD_BYTES)):
                        seen = remaining.popleft()
                        stored = known.get(seen.relative)
                        pending.append((pool.submit(self._prepare, seen, stored.content_hash if stored else None,
                                                    vanished_hashes), seen.size))
                        in_flight += seen.size
                    if not pending:
                        return
                    yield pending.popleft()[0].result()
            finally:
                for future, _size in pending:
                    future.cancel()

    def _prepare(self, seen: _Seen, stored_hash: str | None, vanished_hashes: frozenset[str]) -> _Prepared:
        prepared = _Prepared(seen)
        try:
            with open(seen.path, "rb") as handle:
                prepared.content_hash = hashlib.file_digest(handle, "sha256").hexdigest()
        except OSError as exc:
            prepared.skipped = f"could not be read ({exc.strerror or exc})"
            return prepared
        if prepared.content_hash == stored_hash or prepared.content_hash in vanished_hashes:
            return prepared  # touched, renamed or moved: what it holds is indexed already
        try:
            prepared.documents = list(self.load(seen.path, max_bytes=self.max_bytes))
        except NoteSkipped as skip:
            prepared.skipped = skip.reason
        except Exception as exc:  # a loader's fault must cost one file, not the folder
            log.exception("Loading %s failed", printable(seen.path))
            prepared.skipped = f"could not be read ({type(exc).__name__}: {exc})"
        return prepared

    def _settled_without_chunks(self, folder_id: int, known: dict[str, StoredFile], prepared: _Prepared,
                                vanished: dict[str, list[StoredFile]], moved: set[int],
                                summary: NotesIndexSummary) -> bool:
        """A touched file (same content), a renamed one, or one that is skipped: saved at once."""
        seen, stored = prepared.seen, known.get(prepared.seen.relative)
        if stored is not None and prepared.content_hash is not None and prepared.content_hash == stored.content_hash:
            repository.touch_file(self.conn, stored.id, seen.size, seen.mtime_ns)
            summary.unchanged += 1
            return True
        twins = vanished.get(prepared.content_hash or "", [])
        if twins:
            twin = twins.pop()
            repository.move_file(self.conn, twin.id, seen.relative, seen.size, seen.mtime_ns,
                                 replacing=stored.id if stored is not None else None)
            moved.add(twin.id)
            summary.renamed += 1
            return True
        if prepared.skipped is not None:
            if stored is not None:
                summary.changed += 1
            repository.save_skipped_file(self.conn, folder_id, seen.values(prepared.content_hash), prepared.skipped)
            return True
        return False

    def _save_loaded(self, folder_id: int, known: dict[str, StoredFile], loaded: _Loaded,
                     summary: NotesIndexSummary) -> None:
        prepared = loaded.prepared
        stored = known.get(prepared.seen.relative)
        if stored is not None:
            summary.changed += 1
        if prepared.skipped is not None:
            repository.save_skipped_file(self.conn, folder_id, prepared.seen.values(prepared.content_hash),
                                         prepared.skipped)
            return
        if stored is None:
            summary.added += 1
        documents = prepared.documents or []
        pages = {(number, section.page) for number, document in enumerate(documents)
                 for section in document.sections if section.page is not None}
        problems = tuple(problem for document in documents for problem in document.problems)
        values = prepared.seen.values(prepared.content_hash, kind=documents[0].kind, documents=len(documents),
                                      pages=len(pages) or None, problems=problems)
        repository.save_indexed_file(self.conn, folder_id, values, loaded.chunks, self.embedder,
                                     np.stack(loaded.vectors))
        summary.embedded += len(loaded.chunks)


def _same_stat(stored: StoredFile, seen: _Seen) -> bool:
    return stored.size == seen.size and stored.mtime_ns == seen.mtime_ns


def embed_missing(conn: apsw.Connection, embedder: TextEmbedder, folder_id: int | None = None, *,
                  progress: IndexProgress | None = None, cancel: Callable[[], bool] | None = None,
                  on_cancel: Callable[[], None] | None = None, batch_size: int = EMBED_BATCH) -> int:
    """Embed the note chunks (of ``folder_id``, or all) the embedder lacks, committing batch by batch; returns
    how many. Stopped by ``cancel``: calls ``on_cancel`` (else raises ``Cancelled``), what was stored stays."""
    from gallery_app.core.errors import Cancelled

    rows = repository.chunks_without_vectors(conn, embedder, folder_id)
    # Similar lengths together: a batch is padded to its longest text.
    rows.sort(key=lambda chunk: len(chunk.embedded))
    done = 0
    for start in range(0, len(rows), batch_size):
        if cancel is not None and cancel():
            if on_cancel is None:
                raise Cancelled(f"Embedding the notes was stopped with {len(rows) - done:,} chunks still to embed; "
                                "what was embedded is kept.")
            on_cancel()
            break
        batch = rows[start:start + batch_size]
        vectors = embedder.embed_passages([chunk.embedded for chunk in batch])
        repository.store_chunk_vectors(conn, embedder, batch, vectors)
        done += len(batch)
        if progress:
            progress("embedding", done, len(rows))
    return done


def index_folder(conn: apsw.Connection, folder: Path | str, embedder: TextEmbedder, *,
                 progress: IndexProgress | None = None, cancel: Callable[[], bool] | None = None,
                 **options) -> NotesIndexSummary:
    """Index (or rescan) one notes folder; see the module's docstring."""
    return NotesIndexer(conn, embedder, progress=progress, cancel=cancel, **options).index_folder(folder)
