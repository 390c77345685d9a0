"""The photo pane's work, as worker functions: each runs on a pool thread with its own connection.

``fn(context, services, ...)`` → result; models come from ``services`` (loaded on first use, on the
worker). Nothing here touches a widget.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from gallery_app.core.errors import AppError, Cancelled, ModelError, ModelNotAvailable
from gallery_app.core.file_names import printable
from gallery_app.core.models import loading
from gallery_app.core.models.specs import Role
from gallery_app.core.photos.chat_photos import chats_with_photos
from gallery_app.core.photos.filters import ALL_PHOTOS, PhotoFilter
from gallery_app.core.photos.indexer import IndexSummary, PhotoIndexer
from gallery_app.core.photos.library import count_photos, folders_with_photos, list_photos
from gallery_app.core.photos.pixels import PixelBuffer
from gallery_app.core.photos.search import (
    DEFAULT_RESULTS, DUPLICATE_THRESHOLD, DuplicateGroup, PhotoResults, PhotoSearch,
)
from gallery_app.ui.workers import WorkerContext


@dataclass(frozen=True)
class MissingClip:
    """Photo search cannot run here: which CLIP tower is missing (the Models dialog opens at its row) and why."""

    role: Role
    problem: ModelNotAvailable


def clip_missing(_context: WorkerContext, services) -> MissingClip | None:
    """The first CLIP tower that is not here (with its message and hint), or None when both are present."""
    for role in (Role.CLIP_TEXT, Role.CLIP_VISION):
        try:
            loading.resolve_setting(role, services.settings.model_setting(role))
        except ModelNotAvailable as missing:
            return MissingClip(role, missing)
        except ModelError as unusable:  # e.g. the settings name a model file that has since been deleted
            return MissingClip(role, ModelNotAvailable(
                str(unusable), hint=unusable.hint or "Choose another model in File → Settings…."))
    return None


@dataclass(frozen=True)
class PhotoCollection:
    """One choice of the grid's filter: every photo, an added folder's, or those a chat sent."""

    kind: str  # "all", "folder" or "chat"
    id: int | None
    name: str  # the folder's name (its path when two share one), the chat's title
    count: int
    path: str = ""  # a folder's whole path

    @property
    def key(self) -> tuple[str, int | None]:
        return self.kind, self.id

    @property
    def label(self) -> str:
        """"All photos (120)", "Folder: Holiday (31)", "Chat: Weekend away (4)"."""
        prefix = {"all": "All photos", "folder": f"Folder: {self.name}", "chat": f"Chat: {self.name}"}[self.kind]
        return f"{prefix} ({self.count:,})"

    @property
    def place(self) -> str:
        """Where the shown photos are, after "12 photos": "" for all, "in “Weekend away”"."""
        return {"all": "", "folder": f"in the folder “{self.name}”", "chat": f"in “{self.name}”"}[self.kind]

    def photo_filter(self, since: date | None = None, until: date | None = None) -> PhotoFilter:
        """The filter of this collection and a day range (AppError when the range ends before it starts)."""
        return PhotoFilter(chat_id=self.id if self.kind == "chat" else None,
                           folder_id=self.id if self.kind == "folder" else None, since=since, until=until)


EVERY_PHOTO = PhotoCollection("all", None, "", 0)


@dataclass(frozen=True)
class PhotoCollections:
    """What the filter offers (every photo first), and the first and last day of the gallery's timeline."""

    choices: list[PhotoCollection]
    first_day: date | None = None
    last_day: date | None = None


def photo_collections(_context: WorkerContext, services) -> PhotoCollections:
    with services.connect() as conn:
        total = count_photos(conn)
        folders = folders_with_photos(conn)
        chats = chats_with_photos(conn)
        newest = list_photos(conn, limit=1)
        oldest = list_photos(conn, limit=1, offset=total - 1) if total else []
    names = [printable(Path(path).name) or printable(path) for _id, path, _count in folders]
    choices = [PhotoCollection("all", None, "", total)]
    for (folder_id, path, count), name in zip(folders, names):
        shared = names.count(name) > 1  # two folders called "Photos": tell them apart by their paths
        choices.append(PhotoCollection("folder", folder_id, printable(path) if shared else name, count,
                                       printable(path)))
    choices.extend(PhotoCollection("chat", chat_id, title, count) for chat_id, title, count in chats)
    return PhotoCollections(choices, oldest[0].taken_time.date() if oldest else None,
                            newest[0].taken_time.date() if newest else None)


def search_text(_context: WorkerContext, services, query: str, k: int = DEFAULT_RESULTS, *,
                where: PhotoFilter = ALL_PHOTOS) -> PhotoResults:
    text_model = services.clip_text()
    with services.connect() as conn:
        return PhotoSearch(conn, text=text_model).by_text(query, k, where=where)


def search_similar(_context: WorkerContext, services, photo_id: int, k: int = DEFAULT_RESULTS, *,
                   where: PhotoFilter = ALL_PHOTOS) -> PhotoResults:
    vision = services.clip_vision()
    with services.connect() as conn:
        return PhotoSearch(conn, vision=vision).similar_to(int(photo_id), k, where=where)


def search_pixels(_context: WorkerContext, services, frame: PixelBuffer, add: bool,
                  k: int = DEFAULT_RESULTS, *, where: PhotoFilter = ALL_PHOTOS) -> PhotoResults:
    vision = services.clip_vision()
    with services.connect() as conn:
        results = PhotoSearch(conn, vision=vision).by_pixels(frame, k, add=add, where=where)
    if results.added is not None and not results.already_there:
        services.data_changed.emit("photos")
    return results


@dataclass
class UploadOutcome:
    results: PhotoResults | None = None  # the search by the last photo that could be read
    added: int = 0
    problems: list[str] = field(default_factory=list)

    def describe(self) -> str:
        parts = [self.results.describe()] if self.results is not None else []
        if self.added > 1:
            parts.append(f"{self.added} photos added")
        parts.extend(self.problems)
        return "; ".join(parts)


def upload(context: WorkerContext, services, paths: list[Path], k: int = DEFAULT_RESULTS, *,
           where: PhotoFilter = ALL_PHOTOS) -> UploadOutcome:
    """Search by each photo and keep it in the gallery; the results shown are those of the last one."""
    vision = services.clip_vision()
    outcome = UploadOutcome()
    with services.connect() as conn:
        search = PhotoSearch(conn, vision=vision)
        for done, path in enumerate(paths, start=1):
            if context.cancelled:
                break
            try:
                results = search.by_image_file(Path(path), k, add=True, where=where)
            except ModelNotAvailable:
                raise
            except AppError as problem:
                if len(paths) == 1:
                    raise
                outcome.problems.append(str(problem))
            else:
                outcome.results = results
                outcome.added += not results.already_there
            context.progress(done, len(paths))
    if outcome.added:
        services.data_changed.emit("photos")
    if outcome.results is None and outcome.problems:
        raise AppError("None of the photos could be read: " + "; ".join(outcome.problems[:3]))
    return outcome


def add_folder(context: WorkerContext, services, folder: Path) -> IndexSummary:
    """Index a folder; without a CLIP model the photos are still added (searchable once it is there)."""
    try:
        vision = services.clip_vision()
    except ModelNotAvailable:
        vision = None

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "indexing":
            context.progress(done, total)

    with services.connect() as conn:
        try:
            summary = PhotoIndexer(conn, vision, progress=progress,
                                   cancel=lambda: context.cancelled).add_folder(folder)
        finally:
            services.data_changed.emit("photos")  # whatever was added so far is in the gallery
    if summary.cancelled:
        raise Cancelled(summary.describe())
    return summary


@dataclass
class DuplicateFindings:
    groups: list[DuplicateGroup]
    #: Why photos that only look alike were not looked for (no CLIP model); None when they were.
    clip_missing: ModelNotAvailable | None = None


def find_duplicates(context: WorkerContext, services, threshold: float = DUPLICATE_THRESHOLD) -> DuplicateFindings:
    """Identical files and resized copies always; with the CLIP model also photos above ``threshold``.

    It writes (the perceptual hashes of photos indexed before they existed), so it runs as a writing job."""
    try:
        vision, missing = services.clip_vision(), None
    except ModelError as unusable:  # missing or damaged: the copies that need no model are still found
        vision = None
        missing = unusable if isinstance(unusable, ModelNotAvailable) else ModelNotAvailable(str(unusable))
    with services.connect() as conn:
        groups = PhotoSearch(conn, vision=vision).duplicates(threshold, cancel=lambda: context.cancelled)
    return DuplicateFindings(groups, missing)
