"""The photos half of the window: the grid, the search box, its filter and dates, and the ways photos come in.

Every search and every import runs on a worker (``services.run``); the grid's rows and thumbnails load
on demand. The filter (all photos, a folder's, a chat's) and the range of days limit the grid and every
search alike, through one ``PhotoFilter``. Without a CLIP model the grid still shows the photos, duplicates
are still found (by their hashes), and a search that needs the model says so beside a *Get the CLIP
model…* button, which opens Help → Models at that model (``models_wanted``): one more click downloads it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import (
    QApplication, QFileDialog, QHBoxLayout, QLineEdit, QListView, QPushButton, QVBoxLayout, QWidget,
)

from gallery_app.core.errors import AppError, ModelNotAvailable
from gallery_app.core.models.specs import Role
from gallery_app.core.photos.filters import ALL_PHOTOS, PhotoFilter
from gallery_app.core.photos.indexer import IndexSummary
from gallery_app.core.photos.library import PhotoRecord
from gallery_app.core.photos.preparing import PHOTO_SUFFIXES, is_photo_file
from gallery_app.core.photos.search import PhotoResults
from gallery_app.ui.photos import jobs
from gallery_app.ui.photos.camera import CameraDialog
from gallery_app.ui.photos.collection_filter import CollectionFilter
from gallery_app.ui.photos.date_range import DateRangeBar, describe_days
from gallery_app.ui.photos.duplicates import DuplicatesDialog
from gallery_app.ui.photos.folder_dialog import folder_dialog
from gallery_app.ui.photos.grid_delegate import PhotoGridDelegate
from gallery_app.ui.photos.grid_model import THUMBNAIL_SIZE, PhotoGridModel
from gallery_app.ui.photos.viewer import PhotoViewer
from gallery_app.ui.plain_text import plain_label, tooltip
from gallery_app.ui.workers import Worker

SEARCH_PLACEHOLDER = "Search your photos by meaning, e.g. “snowy mountains” (Enter)"
#: What follows a missing CLIP model's message in the status line, beside the button that does it.
GET_CLIP = "Get the CLIP model… opens Help → Models, where Download is one click."


def count_text(count: int) -> str:
    return f"{count:,} photo" + ("" if count == 1 else "s")


def _then(text: str, scope: str) -> str:
    return f"{text} {scope}" if scope else text


class PhotoPane(QWidget):
    """``PhotoPane(services)``: header with what is shown and the actions, search box with its filter
    and dates, and the grid."""

    #: A search's results are on screen (text, similar, upload, camera).
    results_shown = Signal(object)
    #: How many photos the filter keeps (the whole gallery's when it keeps all), whenever it is (re)read.
    count_changed = Signal(int)
    #: None when photo search can run; else the ModelNotAvailable saying what is missing.
    clip_checked = Signal(object)
    #: A folder was indexed (IndexSummary), or the indexing stopped.
    folder_added = Signal(object)
    #: Something the person should read (also shown in the pane's status line).
    problem = Signal(str)
    #: *Open in chat* in a photo's large view: the ChatPhoto (chat and message) to show in the chat viewer.
    open_in_chat = Signal(object)
    #: *Get the CLIP model…*: the Role whose row Help → Models should open at (the window shows the dialog).
    models_wanted = Signal(object)

    def __init__(self, services, parent: QWidget | None = None):
        super().__init__(parent)
        self.services = services
        self.clip_problem: ModelNotAvailable | None = None
        #: The CLIP tower the last search needed (words: the text tower; a photo or a frame: the vision one).
        self.clip_role: Role = Role.CLIP_VISION
        self.viewer: PhotoViewer | None = None
        self.camera_dialog: CameraDialog | None = None
        self.duplicates_dialog: DuplicatesDialog | None = None
        self.folder_dialog: QFileDialog | None = None
        self._search_serial = 0
        self._collections_serial = 0
        self._pending_click: int | None = None
        #: What the grid and every search keep: the filter's folder or chat and the range of days.
        self.where: PhotoFilter = ALL_PHOTOS
        self.collection: jobs.PhotoCollection = jobs.EVERY_PHOTO  # the folder or chat ``where`` keeps
        #: The search shown or under way, run again when the filter changes (None for the grid, an upload
        #: or a camera frame: those are not searched again).
        self._rerun: Callable[[], Worker | None] | None = None
        self._refusal: str | None = None  # the status line's "the range starts after it ends", while shown

        self.header = plain_label(count_text(0))
        font = self.header.font()
        font.setPointSizeF(font.pointSizeF() * 1.25)
        font.setBold(True)
        self.header.setFont(font)

        self.search_box = QLineEdit()
        self.search_box.setPlaceholderText(SEARCH_PLACEHOLDER)
        self.search_box.setClearButtonEnabled(True)
        self.search_box.returnPressed.connect(lambda: self.search_text(self.search_box.text()))
        self.search_box.textChanged.connect(self._search_text_changed)
        escape = QAction(self.search_box)
        escape.setShortcut(QKeySequence(Qt.Key.Key_Escape))
        escape.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        escape.triggered.connect(self._escape)
        self.search_box.addAction(escape)

        self.filter = CollectionFilter()
        self.filter.chosen.connect(self._filter_changed)
        self.dates = DateRangeBar()
        self.dates.changed.connect(self._filter_changed)

        self.clear_search_button = QPushButton("Clear search")
        self.clear_search_button.setToolTip("Back from the search results to the photos the filter shows (Esc)")
        self.clear_search_button.setEnabled(False)
        self.clear_search_button.clicked.connect(self._escape)
        self.add_folder_button = QPushButton("Add folder…")
        self.add_folder_button.clicked.connect(self.choose_folder)
        self.upload_button = QPushButton("Upload photo…")
        self.upload_button.clicked.connect(self.choose_uploads)
        self.camera_button = QPushButton("Camera…")
        self.camera_button.clicked.connect(self.open_camera)
        self.duplicates_button = QPushButton("Duplicates")
        self.duplicates_button.clicked.connect(self.show_duplicates)

        self.status_line = plain_label(" ")  # queries, folder and file names, errors
        self.status_line.setWordWrap(True)
        self.status_line.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # Shown while a search needs a CLIP tower that is not here: a click opens Help → Models at its row,
        # where Download is one more click (rather than a command line to copy).
        self.get_clip_button = QPushButton("Get the CLIP model…")
        self.get_clip_button.setToolTip("Opens Help → Models at the CLIP model: one click downloads it")
        self.get_clip_button.clicked.connect(lambda: self.models_wanted.emit(self.clip_role))
        self.get_clip_button.setVisible(False)

        self.model = PhotoGridModel(services, self)
        self.model.total_changed.connect(self._count_read)
        self.model.thumbnail_failed.connect(lambda text: self.services.message.emit(text))
        self.model.error.connect(self._show_error)
        self.view = QListView()
        self.view.setViewMode(QListView.ViewMode.IconMode)
        self.view.setResizeMode(QListView.ResizeMode.Adjust)
        self.view.setMovement(QListView.Movement.Static)
        # No grid size and no uniform sizes: month headers are as wide as the view (grid_delegate.py).
        self.view.setSpacing(4)
        self.view.setLayoutMode(QListView.LayoutMode.Batched)  # lay out big pages in steps, not all at once
        self.view.setBatchSize(200)
        self.view.setIconSize(QSize(THUMBNAIL_SIZE, THUMBNAIL_SIZE))
        self.view.setItemDelegate(PhotoGridDelegate(self.view, QSize(THUMBNAIL_SIZE + 16, THUMBNAIL_SIZE + 32)))
        self.view.setWordWrap(True)
        self.view.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.view.setSelectionMode(QListView.SelectionMode.SingleSelection)
        self.view.setModel(self.model)
        self.view.clicked.connect(self._clicked)
        self.view.doubleClicked.connect(self._double_clicked)
        self._click_timer = QTimer(self)
        self._click_timer.setSingleShot(True)
        self._click_timer.timeout.connect(self._single_click)

        top = QHBoxLayout()
        top.addWidget(self.header, 1)
        for button in (self.add_folder_button, self.upload_button, self.camera_button, self.duplicates_button):
            top.addWidget(button)
        searching = QHBoxLayout()
        searching.addWidget(self.search_box, 1)
        searching.addWidget(self.filter)
        searching.addWidget(self.dates)
        searching.addWidget(self.clear_search_button)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addLayout(searching)
        status_row = QHBoxLayout()
        status_row.addWidget(self.status_line, 1)
        status_row.addWidget(self.get_clip_button)
        layout.addLayout(status_row)
        layout.addWidget(self.view, 1)
        # Keyboard order: the search box first (it has the focus when the pane opens), then what limits
        # it, the actions, and the grid.
        chain = [self.search_box, self.filter, self.dates.toggle, self.dates.since_edit, self.dates.until_edit,
                 self.clear_search_button, self.add_folder_button, self.upload_button, self.camera_button,
                 self.duplicates_button, self.view]
        for before, after in zip(chain, chain[1:]):
            QWidget.setTabOrder(before, after)
        self.setAcceptDrops(True)

        services.data_changed.connect(self._data_changed)
        services.models_reset.connect(self._check_clip)
        self.model.show_all(self.where)
        self._load_collections()
        self._check_clip()

    # --- public API ------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Re-read the count (and the rows when the grid is shown) and the filter's choices after the
        gallery or the chats changed."""
        self.model.refresh()
        self._load_collections()

    def show_all(self) -> None:
        """Back to the grid: every photo the filter and dates keep, by month."""
        self._search_serial += 1  # results still on their way are no longer wanted
        self._rerun = None
        self.model.show_all(self.where)
        self.clear_search_button.setEnabled(False)
        self.status_line.setText(" ")

    def scope(self) -> str:
        """Where the shown photos are: "in “Weekend away” from 1 May 2024 to 31 May 2024", "" for all."""
        days = describe_days(self.where.since, self.where.until)
        return " ".join(part for part in (self.collection.place, days) if part)

    def search_text(self, query: str) -> Worker | None:
        query = query.strip()
        if not query:
            self.show_all()
            return None
        if self.search_box.text().strip() != query:
            self.search_box.setText(query)
        self.status_line.setText(_then(f"Searching for “{query}”", self.scope()) + "…")
        self.clip_role = Role.CLIP_TEXT
        worker = self._search(Worker(jobs.search_text, self.services, query, where=self.where))
        self._rerun = lambda: self.search_text(query)
        return worker

    def show_similar(self, photo_id: int) -> Worker:
        self.status_line.setText(_then("Looking for similar photos", self.scope()) + "…")
        self.clip_role = Role.CLIP_VISION
        worker = self._search(Worker(jobs.search_similar, self.services, int(photo_id), where=self.where))
        self._rerun = lambda: self.show_similar(photo_id)
        return worker

    def upload(self, paths: list[Path]) -> Worker | None:
        """Search by each photo and add it to the gallery (Upload photo…, or files dropped on the window)."""
        paths = [Path(p) for p in paths]
        photos = [p for p in paths if is_photo_file(p)]
        if not photos:
            self._show_error(AppError("These files are not photos this app can read.",
                                      hint="Choose JPEG, PNG, WebP, HEIC or similar image files."))
            return None
        label = f"Adding {photos[0].name}" if len(photos) == 1 else f"Adding {len(photos)} photos"
        self.status_line.setText(label + "…")
        self.clip_role = Role.CLIP_VISION
        worker = Worker(jobs.upload, self.services, photos, where=self.where).writing("the photo upload")
        return self._search(worker, label=label, on_result=self._upload_done)

    def add_folder(self, path: Path | str) -> Worker:
        folder = Path(path)
        worker = Worker(jobs.add_folder, self.services, folder).writing("the photo indexing")
        worker.signals.progress.connect(
            lambda done, total: self.status_line.setText(f"Adding photos from {folder.name}: {done} of {total}"))
        worker.signals.result.connect(self._folder_done)
        worker.signals.error.connect(self._show_error)
        worker.signals.cancelled.connect(lambda: self._folder_done(None))
        self.status_line.setText(f"Adding photos from {folder}…")
        self.services.run(worker, f"Adding photos from {folder.name or folder}")
        if worker.waiting_note():
            self.status_line.setText(f"Adding photos from {folder}: {worker.waiting_note()}")
        return worker

    def open_camera(self) -> CameraDialog:
        if self.camera_dialog is not None:
            self.camera_dialog.close()
            self.camera_dialog.deleteLater()
        dialog = CameraDialog(self.services, self, where=self.where)
        dialog.results_ready.connect(self._camera_results)
        dialog.open()
        self.camera_dialog = dialog
        return dialog

    def show_duplicates(self) -> DuplicatesDialog:
        if self.duplicates_dialog is not None:
            self.duplicates_dialog.close()
            self.duplicates_dialog.deleteLater()
        dialog = DuplicatesDialog(self.services, self)
        dialog.photo_activated.connect(self.open_viewer)
        dialog.models_wanted.connect(self.models_wanted)
        dialog.show()
        self.duplicates_dialog = dialog
        return dialog

    def open_viewer(self, photo: PhotoRecord) -> PhotoViewer:
        if self.viewer is not None:
            self.viewer.close()
            self.viewer.deleteLater()
        viewer = PhotoViewer(self.services, photo, self)
        viewer.similar_requested.connect(self.show_similar)
        viewer.open_in_chat.connect(self.open_in_chat)
        viewer.show()
        self.viewer = viewer
        return viewer

    def choose_folder(self) -> QFileDialog:
        """*Add folder…*: the folder chooser, open (not blocking); the folder chosen is indexed."""
        if self.folder_dialog is not None:
            self.folder_dialog.close()
            self.folder_dialog.deleteLater()
        dialog = folder_dialog(self, "Add a folder of photos", str(Path.home()))
        dialog.fileSelected.connect(lambda folder: self.add_folder(folder) if folder else None)
        dialog.open()
        self.folder_dialog = dialog
        return dialog

    def choose_uploads(self) -> None:
        patterns = " ".join(f"*{suffix}" for suffix in sorted(PHOTO_SUFFIXES))
        files, _ = QFileDialog.getOpenFileNames(self, "Search by a photo (and add it)", str(Path.home()),
                                                f"Photos ({patterns})")
        if files:
            self.upload([Path(f) for f in files])

    def shutdown(self) -> None:
        """Close dialogs and wait for the thumbnail threads (the window calls it when it closes)."""
        self._click_timer.stop()
        for dialog in (self.camera_dialog, self.viewer, self.duplicates_dialog, self.folder_dialog):
            if dialog is not None:
                dialog.close()
        self.model.shutdown()

    # --- searching -------------------------------------------------------------------------------
    def _search(self, worker: Worker, *, label: str | None = None, on_result=None) -> Worker:
        """Start a search; only the newest one's results (``on_result(result, serial)``) reach the grid."""
        self._search_serial += 1
        self._rerun = None  # search_text and show_similar set theirs once started
        serial = self._search_serial
        on_result = on_result or self._results_ready
        worker.signals.result.connect(lambda result: on_result(result, serial))
        worker.signals.error.connect(lambda error: self._search_failed(error, serial))
        return self.services.run(worker, label)

    def _results_ready(self, results: PhotoResults, serial: int | None = None) -> None:
        if serial is not None and serial != self._search_serial:
            return  # a newer search (or "Clear search", or another filter) came after this one
        self.model.show_results(results)
        self.view.scrollToTop()
        self.clear_search_button.setEnabled(True)
        self.status_line.setText(_then(f"{results.describe()} — {results.query}", self.scope()))
        self.results_shown.emit(results)

    def _camera_results(self, results: PhotoResults) -> None:
        self._search_serial += 1  # the capture is the newest search: one still under way is not wanted
        self._rerun = None
        self._results_ready(results)

    def _upload_done(self, outcome: jobs.UploadOutcome, serial: int) -> None:
        if outcome.results is not None and serial == self._search_serial:  # else a newer search is shown
            self._results_ready(outcome.results)
            self.status_line.setText(_then(outcome.describe(), self.scope()))

    def _search_failed(self, error: AppError, serial: int) -> None:
        if serial == self._search_serial:
            self._rerun = None  # the grid stays; another filter must not repeat the failure
            self._show_error(error)

    def _show_error(self, error: AppError) -> None:
        text = str(error)
        if isinstance(error, ModelNotAvailable):
            self._clip_state(jobs.MissingClip(self.clip_role, error))
            # The core's hint is a command line; the window has the button beside this line instead.
            text = f"{error.message} {GET_CLIP}"
        self.status_line.setText(text)
        self.problem.emit(text)

    # --- the filter and the dates ----------------------------------------------------------------
    def _load_collections(self) -> None:
        # Two reloads close together (an import tells "photos" then "chats") may answer out of order.
        self._collections_serial += 1
        serial = self._collections_serial
        worker = Worker(jobs.photo_collections, self.services)
        worker.signals.result.connect(
            lambda collections: self._collections_ready(collections) if serial == self._collections_serial else None)
        worker.signals.error.connect(self._show_error)
        self.services.run(worker)

    def _collections_ready(self, collections: jobs.PhotoCollections) -> None:
        self.dates.suggest(collections.first_day, collections.last_day)
        self.filter.set_collections(collections.choices)  # emits chosen when the chosen one is gone
        if self.collection.key == self.filter.current().key:
            self.collection = self.filter.current()  # its title may have changed
            self._count_read(self.model.total)

    def _filter_changed(self, *_args) -> None:
        collection = self.filter.current()
        try:
            where = collection.photo_filter(*self.dates.days())
        except AppError as refused:  # e.g. a range that starts after it ends: the grid stays as it was
            self.dates.mark_invalid(str(refused))
            self._show_error(refused)
            self._refusal = self.status_line.text()
            return
        self.dates.mark_invalid(None)
        if self._refusal is not None and self.status_line.text() == self._refusal:
            self.status_line.setText(" ")
        self._refusal = None
        if where == self.where:
            return
        self.where, self.collection = where, collection
        if self._rerun is not None:
            self.model.set_filter(where)
            self._rerun()  # the same words or photo, inside the new filter
        else:
            self.show_all()

    # --- CLIP availability -------------------------------------------------------------------------
    def _check_clip(self) -> None:
        worker = Worker(jobs.clip_missing, self.services)
        worker.signals.result.connect(self._clip_state)
        self.services.run(worker)

    def _clip_state(self, missing: jobs.MissingClip | None) -> None:
        self.clip_problem = missing.problem if missing is not None else None
        self.get_clip_button.setVisible(missing is not None)
        if missing is None:
            self.search_box.setPlaceholderText(SEARCH_PLACEHOLDER)
            self.search_box.setToolTip("")
        else:
            self.clip_role = missing.role
            self.search_box.setPlaceholderText("Search by meaning needs the CLIP model: Help → Models… downloads it")
            self.search_box.setToolTip(tooltip(str(missing.problem)))  # the whole story, command line included
            self.status_line.setText(f"Photos are shown and Duplicates finds copies; searching them by meaning "
                                     f"needs the CLIP model. {missing.problem.message} {GET_CLIP}")
        self.clip_checked.emit(self.clip_problem)

    # --- reactions ---------------------------------------------------------------------------------
    def _count_read(self, count: int) -> None:
        self.header.setText(_then(count_text(count), self.scope()))
        self.count_changed.emit(count)

    def _data_changed(self, what: str) -> None:
        if what in ("photos", "chats"):  # a chat import adds the photos its export holds
            self.refresh()

    def _folder_done(self, summary: IndexSummary | None) -> None:
        text = summary.describe() if summary is not None else "Stopped adding photos; those added so far are kept."
        self.status_line.setText(text)
        self.services.message.emit(text)
        self.folder_added.emit(summary)

    def _search_text_changed(self, text: str) -> None:
        if not text and self.model.showing_results:
            self.show_all()  # the clear button

    def _escape(self) -> None:
        self.search_box.blockSignals(True)
        self.search_box.clear()
        self.search_box.blockSignals(False)
        self.show_all()

    def _clicked(self, index) -> None:
        # Wait out the double-click interval: a double-click opens the viewer instead.
        self._pending_click = index.data(PhotoGridModel.IdRole)
        self._click_timer.start(QApplication.doubleClickInterval())

    def _single_click(self) -> None:
        if self._pending_click is not None:
            self.show_similar(self._pending_click)
            self._pending_click = None

    def _double_clicked(self, index) -> None:
        self._click_timer.stop()
        self._pending_click = None
        photo = index.data(PhotoGridModel.PhotoRole)
        if photo is not None:
            self.open_viewer(photo)

    # --- drops -------------------------------------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if any(is_photo_file(Path(url.toLocalFile())) for url in event.mimeData().urls() if url.isLocalFile()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = [Path(url.toLocalFile()) for url in event.mimeData().urls() if url.isLocalFile()]
        if self.upload(paths) is not None:
            event.acceptProposedAction()
