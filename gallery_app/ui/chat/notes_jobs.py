"""The notes folders' work off the GUI thread: listing them, indexing one, rescanning all, removing one, reading
a note for the viewer, and telling a dropped folder of notes from one of photos.

Each function runs inside a ``ui.workers.Worker`` (first argument: the ``WorkerContext``) and calls the core
(``core/notes``); what changed the library is announced as ``services.data_changed.emit("notes")``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gallery_app.core.errors import AppError, Cancelled
from gallery_app.core.file_names import printable
from gallery_app.core.folder_kind import mostly_notes
from gallery_app.core.notes.indexer import NotesIndexSummary, describe_kinds, index_folder
from gallery_app.core.notes.reading import NotePassage, read_passage
from gallery_app.core.notes.repository import KindTotals, NotesFolder, kind_totals, list_folders, remove_folder, \
    skipped_files
from gallery_app.ui.workers import WorkerContext

log = logging.getLogger(__name__)

#: The indexer's stages (core.notes.indexer.IndexProgress) as the status bar names them.
STEPS = {"scanning": "Looking for notes…", "indexing": "Reading and embedding notes…",
         "embedding": "Embedding notes for the text embedder in use…"}


@dataclass(frozen=True)
class NotesFolderInfo:
    """A notes folder as the source list shows it: its files per kind, passages and skipped files."""

    folder: NotesFolder
    kinds: dict[str, KindTotals] = field(default_factory=dict)
    #: (relative path, reason) of each file not indexed.
    skipped: list[tuple[str, str]] = field(default_factory=list)

    @property
    def id(self) -> int:
        return self.folder.id

    @property
    def name(self) -> str:
        return self.folder.path.name or str(self.folder.path)

    @property
    def chunks(self) -> int:
        return sum(totals.chunks for totals in self.kinds.values())

    def details(self) -> str:
        """"71 notes, 3 PDFs (29 pages) · 349 passages · 2 skipped"."""
        passages = "passage" if self.chunks == 1 else "passages"
        parts = [describe_kinds(self.kinds), f"{self.chunks:,} {passages}"]
        if self.skipped:
            parts.append(f"{len(self.skipped):,} skipped")
        if self.folder.scanned_at is None:
            parts.append("not fully indexed yet")
        return " · ".join(parts)


def load_folders(context: WorkerContext, services) -> list[NotesFolderInfo]:
    with services.connect() as conn:
        return [NotesFolderInfo(folder, kind_totals(conn, folder.id),
                                [(f.relative_path, f.skip_reason or "") for f in skipped_files(conn, folder.id)])
                for folder in list_folders(conn)]


class _Steps:
    """The indexer's progress as the job's steps ("Reading and embedding notes…") and progress bar."""

    def __init__(self, context: WorkerContext):
        self.context = context
        self.stage: str | None = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage != self.stage and stage in STEPS:
            self.stage = stage
            self.context.step(STEPS[stage])
        if stage in ("indexing", "embedding") and total:
            self.context.progress(done, total)


def add_folder(context: WorkerContext, services, folder: Path) -> NotesIndexSummary:
    """Indexes (or rescans: only what changed is read again) one notes folder; its summary."""
    embedder = services.text_embedder()  # ModelNotAvailable ends the job with its message and hint
    with services.connect() as conn:
        try:
            summary = index_folder(conn, folder, embedder, progress=_Steps(context), cancel=lambda: context.cancelled)
        finally:
            services.data_changed.emit("notes")  # every file finished is in the library
    if summary.cancelled:
        raise Cancelled(summary.describe())
    return summary


def rescan_folders(context: WorkerContext, services) -> list[NotesIndexSummary]:
    """Every notes folder rescanned (the window's start): the summaries of those that changed. A folder that
    cannot be read now (an unplugged drive) keeps its notes and is only logged: the next start tries again."""
    with services.connect() as conn:
        folders = list_folders(conn)
        if not folders:
            return []
        embedder = services.text_embedder()
        changed: list[NotesIndexSummary] = []
        try:
            for folder in folders:
                if context.cancelled:
                    raise Cancelled()
                try:
                    summary = index_folder(conn, folder.path, embedder, progress=_Steps(context),
                                           cancel=lambda: context.cancelled)
                except AppError as error:
                    log.info("notes folder %s not rescanned: %s", folder.path, error)
                    continue
                if summary.cancelled:
                    raise Cancelled()
                if summary.added or summary.changed or summary.renamed or summary.removed or summary.embedded:
                    changed.append(summary)
        finally:
            services.data_changed.emit("notes")
    return changed


def remove(context: WorkerContext, services, folder_id: int) -> str:
    """Forgets a notes folder (its notes, passages and vectors; the files stay); says what was removed."""
    with services.connect() as conn:
        folders = {folder.id: folder for folder in list_folders(conn)}
        if folder_id not in folders:
            return "That notes folder was already removed."
        kinds = kind_totals(conn, folder_id)
        remove_folder(conn, folder_id)
    services.data_changed.emit("notes")
    return (f"Removed the notes folder {printable(folders[folder_id].path)} ({describe_kinds(kinds)}) from the "
            "library; the files themselves are untouched.")


def read_note(context: WorkerContext, services, chunk_id: int) -> NotePassage:
    with services.connect() as conn:
        return read_passage(conn, chunk_id)


def sort_folders(context: WorkerContext, folders: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """(notes folders, photo folders) among dropped ``folders``: see ``core.folder_kind.mostly_notes``."""
    notes = [folder for folder in folders if mostly_notes(folder)]
    return notes, [folder for folder in folders if folder not in notes]
