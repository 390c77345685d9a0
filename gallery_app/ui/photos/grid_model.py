"""The photo grid's model: the photos a filter keeps, fetched in pages, or the hits of one search.

Grid rows come from the database a page at a time (``canFetchMore``/``fetchMore``), read on a worker
with its own connection, so 10,000 photos cost one page of rows until the person scrolls. They are
newest first on the timeline, and a month header row ("May 2024") starts each month; the delegate
(``grid_delegate.py``) paints it across the grid's width. "Results" rows are a search's hits, each
with its similarity, in rank order, so they have no headers. Thumbnails are loaded only for rows the
view paints (see ``thumbnails.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from PySide6.QtCore import QAbstractListModel, QModelIndex, QObject, QPersistentModelIndex, Qt, Signal

from gallery_app.core.photos.filters import ALL_PHOTOS, PhotoFilter
from gallery_app.core.photos.library import PhotoRecord, count_photos, list_photos
from gallery_app.core.photos.search import PhotoResults
from gallery_app.ui.photos.thumbnails import ThumbnailLoader
from gallery_app.ui.plain_text import tooltip
from gallery_app.ui.workers import Worker, WorkerContext

PAGE_SIZE = 200
THUMBNAIL_SIZE = 160


def describe_photo(photo: PhotoRecord, similarity: float | None = None) -> str:
    """The tooltip: name, similarity, date, size, camera, place and path."""
    lines = [photo.name]
    if similarity is not None:
        lines.append(f"similarity {similarity:.3f}")
    if photo.captured_at:
        lines.append(photo.captured_at.replace("T", " ")[:16])
    lines.append(f"{photo.width} × {photo.height}")
    if photo.camera:
        lines.append(photo.camera)
    if photo.latitude is not None and photo.longitude is not None:
        lines.append(f"{photo.latitude:.5f}, {photo.longitude:.5f}")
    lines.append(photo.shown_path)
    return "\n".join(lines)


@dataclass(frozen=True)
class MonthHeader:
    """The row that starts a month of the timeline."""

    month: str  # "2024-05", as ``taken_at`` starts

    @property
    def label(self) -> str:
        year, month = self.month.split("-")
        return f"{date(int(year), int(month), 1):%B %Y}"


def month_of(photo: PhotoRecord) -> str:
    return photo.taken_at[:7]


def _load_page(_context: WorkerContext, services, where: PhotoFilter, generation: int, offset: int, limit: int,
               with_count: bool):
    with services.connect() as conn:
        total = count_photos(conn, where) if with_count else None
        photos = list_photos(conn, limit=limit, offset=offset, where=where) if limit else []
        return where, generation, offset, photos, total


class PhotoGridModel(QAbstractListModel):
    """Rows are photos (``PhotoRole``); DecorationRole is the thumbnail once decoded off the GUI thread."""

    PhotoRole = Qt.ItemDataRole.UserRole + 1  # the PhotoRecord
    IdRole = Qt.ItemDataRole.UserRole + 2
    PathRole = Qt.ItemDataRole.UserRole + 3
    SimilarityRole = Qt.ItemDataRole.UserRole + 4  # None when showing all photos
    HeaderRole = Qt.ItemDataRole.UserRole + 5  # "May 2024" on a month header row, None on a photo

    #: The number of photos the filter keeps changed (or was first read).
    total_changed = Signal(int)
    #: A page of the grid arrived (photos now loaded).
    page_loaded = Signal(int)
    thumbnail_failed = Signal(str)
    error = Signal(object)  # an AppError from a page load

    def __init__(self, services, parent: QObject | None = None, *, page_size: int = PAGE_SIZE,
                 thumbnail_size: int = THUMBNAIL_SIZE):
        super().__init__(parent)
        self.services = services
        self.page_size = page_size
        self.thumbnails = ThumbnailLoader(thumbnail_size, self)
        self.thumbnails.ready.connect(self._thumbnail_ready)
        self.thumbnails.failed.connect(self._thumbnail_failed)
        self._rows: list[PhotoRecord | MonthHeader] = []  # what the view shows, headers included
        self._photos: list[PhotoRecord] = []  # the photos among them, in order (the next page's offset)
        self._similarities: list[float] | None = None  # set in results mode (no headers then: rows = photos)
        self._row_of: dict[int, int] = {}  # photo id → row
        self.where: PhotoFilter = ALL_PHOTOS
        self._total = 0  # photos the filter keeps (grid mode: rows there are to fetch)
        self._generation = 0  # bumped on every reset, so late pages of an old listing are dropped
        self._fetching = False
        self.results: PhotoResults | None = None

    # --- modes ---------------------------------------------------------------------------------
    @property
    def showing_results(self) -> bool:
        return self._similarities is not None

    @property
    def total(self) -> int:
        return self._total

    def show_all(self, where: PhotoFilter | None = None) -> None:
        """Back to the grid of every photo ``where`` keeps (by default the filter already set), newest
        first with month headers, re-read from the database."""
        if where is not None:
            self.where = where
        self._reset([], None)
        self.results = None
        self._load(0, with_count=True)

    def set_filter(self, where: PhotoFilter) -> None:
        """Keep what ``where`` keeps from now on: the grid is read again, a search's results stay on
        screen (their count is the new filter's)."""
        self.where = where
        if self.showing_results:
            self._load(0, with_count=True, count_only=True)
        else:
            self.show_all()

    def refresh(self) -> None:
        """The gallery changed: re-read the count, and the rows too when showing the grid."""
        if self.showing_results:
            self._load(0, with_count=True, count_only=True)
        else:
            self.show_all()

    def show_results(self, results: PhotoResults) -> None:
        self.results = results
        self._reset([hit.photo for hit in results.hits], [hit.similarity for hit in results.hits])

    def _reset(self, photos: list[PhotoRecord], similarities: list[float] | None) -> None:
        self.beginResetModel()
        self._generation += 1
        self._fetching = False
        self._photos = list(photos)
        self._rows = list(photos)
        self._similarities = similarities
        self._row_of = {photo.id: row for row, photo in enumerate(self._rows)}
        self.thumbnails.drop_queued()
        self.endResetModel()

    # --- paging --------------------------------------------------------------------------------
    def canFetchMore(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> bool:
        if parent.isValid() or self.showing_results or self._fetching:
            return False
        return len(self._photos) < self._total

    def fetchMore(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> None:
        if self.canFetchMore(parent):
            self._load(len(self._photos))

    def _load(self, offset: int, *, with_count: bool = False, count_only: bool = False) -> None:
        self._fetching = self._fetching or not count_only
        worker = Worker(_load_page, self.services, self.where, self._generation, offset,
                        0 if count_only else self.page_size, with_count)
        worker.signals.result.connect(lambda outcome, c=count_only: self._page_ready(outcome, c))
        worker.signals.error.connect(self._page_failed)
        self.services.run(worker)

    def _page_ready(self, outcome, count_only: bool) -> None:
        where, generation, offset, photos, total = outcome
        if where != self.where:
            return  # read for a filter the person has since changed: neither its count nor its rows apply
        if total is not None:
            self._total = total
            self.total_changed.emit(total)
        if count_only or generation != self._generation:
            return
        self._fetching = False
        if offset != len(self._photos):
            return  # a page that no longer fits (should not happen: one fetch at a time)
        fresh = [photo for photo in photos if photo.id not in self._row_of]
        if fresh:
            self._append(fresh)
        if len(photos) < self.page_size:
            self._total = len(self._photos)  # photos were removed meanwhile: nothing more to fetch
        self.page_loaded.emit(len(self._photos))

    def _append(self, fresh: list[PhotoRecord]) -> None:
        """Add a page's photos after the loaded ones, with a header wherever a month starts (also
        between pages: the page may go on with the month the last one ended in)."""
        month = month_of(self._photos[-1]) if self._photos else None
        rows: list[PhotoRecord | MonthHeader] = []
        for photo in fresh:
            if month_of(photo) != month:
                month = month_of(photo)
                rows.append(MonthHeader(month))
            rows.append(photo)
        first = len(self._rows)
        self.beginInsertRows(QModelIndex(), first, first + len(rows) - 1)  # last is inclusive
        self._rows.extend(rows)
        self._photos.extend(fresh)
        for row in range(first, len(self._rows)):
            if isinstance(self._rows[row], PhotoRecord):
                self._row_of[self._rows[row].id] = row
        self.endInsertRows()

    def _page_failed(self, error) -> None:
        self._fetching = False
        self.error.emit(error)

    # --- the Qt model ----------------------------------------------------------------------------
    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def flags(self, index: QModelIndex | QPersistentModelIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        if isinstance(self._rows[index.row()], MonthHeader):
            return Qt.ItemFlag.ItemNeverHasChildren  # a heading: neither clicked nor selected
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemNeverHasChildren

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not 0 <= index.row() < len(self._rows) or index.column() != 0:
            return None
        photo = self._rows[index.row()]
        if isinstance(photo, MonthHeader):
            return photo.label if role in (Qt.ItemDataRole.DisplayRole, self.HeaderRole) else None
        similarity = self._similarities[index.row()] if self._similarities is not None else None
        if role == Qt.ItemDataRole.DisplayRole:
            stem = photo.name.rsplit(".", 1)[0].replace("_", " ")
            return f"{similarity:.2f} · {stem}" if similarity is not None else stem
        if role == Qt.ItemDataRole.DecorationRole:
            return self.thumbnails.icon(photo.id, photo.path, photo.content_hash)
        if role == Qt.ItemDataRole.ToolTipRole:
            return tooltip(describe_photo(photo, similarity))
        if role == self.PhotoRole:
            return photo
        if role == self.IdRole:
            return photo.id
        if role == self.PathRole:
            return photo.path
        if role == self.SimilarityRole:
            return similarity
        return None

    def photo_at(self, row: int) -> PhotoRecord | None:
        """The photo of a row; None on a month header."""
        shown = self._rows[row]
        return shown if isinstance(shown, PhotoRecord) else None

    def index_of(self, photo_id: int) -> QModelIndex:
        """The row of a loaded photo (an invalid index when it is not loaded)."""
        row = self._row_of.get(int(photo_id))
        return self.index(row) if row is not None else QModelIndex()

    def photos(self) -> list[PhotoRecord]:
        """The photos loaded, in the order shown (headers left out)."""
        return list(self._photos)

    def month_headers(self) -> list[str]:
        """The month headers in the order shown ("May 2024", "March 2024", …)."""
        return [row.label for row in self._rows if isinstance(row, MonthHeader)]

    def similarities(self) -> list[float] | None:
        return list(self._similarities) if self._similarities is not None else None

    # --- thumbnails ------------------------------------------------------------------------------
    def _thumbnail_ready(self, key: int) -> None:
        row = self._row_of.get(key)
        if row is not None:
            index = self.index(row)
            self.dataChanged.emit(index, index, [Qt.ItemDataRole.DecorationRole])

    def _thumbnail_failed(self, key: int, message: str) -> None:
        self._thumbnail_ready(key)  # repaint with the broken-photo icon
        self.thumbnail_failed.emit(message)

    def loaded_thumbnails(self) -> int:
        return self.thumbnails.loaded

    def shutdown(self) -> None:
        """Wait for the thumbnail threads (call before the window goes away)."""
        self._generation += 1
        self.thumbnails.shutdown()
