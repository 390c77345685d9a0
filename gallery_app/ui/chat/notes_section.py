"""The source list's "Notes" part: the notes folders under the chats, each with what it holds; adding a folder
(File → Add notes folder…, or a folder dropped on the chat pane), rescanning them all at the window's start,
and removing one (its context menu, after a confirmation).

Selecting folders here narrows the questions, as selecting chats does (the pane combines both). Indexing runs
as a writing Worker through ``Services.run``: progress and Cancel in the status bar, the summary at the end.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QItemSelectionModel, QPoint, Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QAbstractItemView, QFileDialog, QLabel, QListView, QMenu, QMessageBox, QVBoxLayout, \
    QWidget

from gallery_app.core.file_names import printable
from gallery_app.core.notes.indexer import NotesIndexSummary
from gallery_app.ui.chat import notes_jobs
from gallery_app.ui.chat.chat_list import ChatListDelegate, FolderIdRole, NotesFolderListModel
from gallery_app.ui.photos import folder_dialog as folder_dialogs
from gallery_app.ui.workers import Worker

#: Rows the list is tall enough for before it scrolls (the chats above get the rest of the column).
VISIBLE_ROWS = 4
STOPPED = "Stopped indexing the notes folder; every file finished is kept. Adding it again continues."


class NotesSection(QWidget):
    #: The folders selected changed (the pane says what questions search).
    selection_changed = Signal()
    #: The list was read again (after a start, an index or a removal).
    folders_loaded = Signal()
    #: A folder was indexed: its summary (None when it was stopped or failed).
    folder_indexed = Signal(object)
    #: Indexing a folder was cancelled: what is kept and how to go on (the status bar only says "cancelled").
    indexing_stopped = Signal(str)
    #: A folder was removed: what the status bar said.
    folder_removed = Signal(str)

    def __init__(self, services, parent: QWidget | None = None):
        super().__init__(parent)
        self.services = services
        self.folder_dialog: QFileDialog | None = None
        self.confirm_box: QMessageBox | None = None
        self.model = NotesFolderListModel(self)
        self.view = QListView()
        self.view.setModel(self.model)
        self.view.setItemDelegate(ChatListDelegate(self.view))
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.view.setUniformItemSizes(True)
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.view.customContextMenuRequested.connect(self._context_menu)
        self.view.selectionModel().selectionChanged.connect(lambda *_: self.selection_changed.emit())
        self.title = QLabel("<b>Notes</b>")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 6, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.view)
        self.setVisible(False)  # until there is a folder: the chats keep the whole column
        services.data_changed.connect(lambda what: self.refresh() if what == "notes" else None)

    # --- the list ------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Reads the notes folders again (in a worker; the pane calls it first); keeps the selection by id."""
        worker = Worker(notes_jobs.load_folders, self.services)
        worker.signals.result.connect(self._loaded)
        self.services.run(worker)

    def selected_folder_ids(self) -> list[int]:
        rows = sorted(index.row() for index in self.view.selectionModel().selectedRows())
        return [self.model.index(row).data(FolderIdRole) for row in rows]

    def _loaded(self, folders: list[notes_jobs.NotesFolderInfo]) -> None:
        selected = set(self.selected_folder_ids())
        self.model.set_folders(folders)
        selection = self.view.selectionModel()
        for folder_id in selected:
            row = self.model.row_of(folder_id)
            if row >= 0:
                selection.select(self.model.index(row), QItemSelectionModel.SelectionFlag.Select)
        row_height = self.view.sizeHintForRow(0) if folders else 0
        self.view.setFixedHeight(min(len(folders), VISIBLE_ROWS) * row_height + 2 * self.view.frameWidth() + 2)
        self.setVisible(bool(folders))
        self.selection_changed.emit()
        self.folders_loaded.emit()

    # --- adding --------------------------------------------------------------------------------
    def choose_folder(self) -> QFileDialog:
        """*Add notes folder…*: the folder chooser, open (not blocking); the folder chosen is indexed."""
        if self.folder_dialog is not None:
            self.folder_dialog.close()
            self.folder_dialog.deleteLater()
        dialog = folder_dialogs.folder_dialog(self, "Add a folder of notes and documents", str(Path.home()))
        dialog.fileSelected.connect(lambda folder: self.add_folder(folder) if folder else None)
        dialog.open()
        self.folder_dialog = dialog
        return dialog

    def add_folder(self, path: Path | str) -> Worker:
        """Indexes a notes folder (a folder added before is rescanned: only what changed is read)."""
        folder = Path(path)
        worker = Worker(notes_jobs.add_folder, self.services, folder).writing("the notes indexing")
        worker.signals.result.connect(self._indexed)
        worker.signals.error.connect(lambda _error: self.folder_indexed.emit(None))  # the status bar says why
        worker.signals.cancelled.connect(self._stopped)
        self.services.run(worker, f"Indexing notes in {printable(folder.name or folder)}")
        return worker

    def rescan_all(self) -> Worker:
        """Every notes folder checked for new, changed, renamed and deleted files (the window's start), in one
        quiet job: the status bar only speaks when something changed."""
        worker = Worker(notes_jobs.rescan_folders, self.services).writing("the notes rescan")
        worker.signals.result.connect(self._rescanned)
        self.services.run(worker)
        return worker

    def _indexed(self, summary: NotesIndexSummary) -> None:
        self.services.message.emit(summary.describe())
        self.folder_indexed.emit(summary)

    def _stopped(self) -> None:
        self.indexing_stopped.emit(STOPPED)
        self.folder_indexed.emit(None)

    def _rescanned(self, changed: list[NotesIndexSummary]) -> None:
        if changed:
            self.services.message.emit("Notes updated: " + " ".join(summary.describe() for summary in changed))

    # --- the context menu ----------------------------------------------------------------------
    def _context_menu(self, position: QPoint) -> QMenu | None:
        index = self.view.indexAt(position)
        if not index.isValid():
            return None
        info = self.model.folders()[index.row()]
        menu = QMenu(self)
        menu.addAction("Rescan", lambda: self.add_folder(info.folder.path))
        menu.addAction("Open folder", lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(str(info.folder.path))))
        menu.addSeparator()
        menu.addAction("Remove notes folder…", lambda: self.confirm_remove(info.id))
        menu.popup(self.view.viewport().mapToGlobal(position))
        return menu

    def confirm_remove(self, folder_id: int) -> QMessageBox | None:
        """Asks first (not blocking); Remove forgets the folder's notes, never its files."""
        row = self.model.row_of(folder_id)
        if row < 0:
            return None
        info = self.model.folders()[row]
        box = QMessageBox(QMessageBox.Icon.Question, "Remove notes folder",
                          f"Remove the notes folder {printable(info.folder.path)} from the library?", parent=self)
        box.setTextFormat(Qt.TextFormat.PlainText)  # a folder's name is data
        box.setInformativeText(f"Its {info.details()} are no longer searched. The files themselves stay "
                               "where they are; adding the folder again indexes them anew.")
        remove = box.addButton("Remove", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.finished.connect(lambda _result: self.remove(folder_id) if box.clickedButton() is remove else None)
        box.open()
        self.confirm_box = box
        return box

    def remove(self, folder_id: int) -> Worker:
        worker = Worker(notes_jobs.remove, self.services, folder_id).writing("the removal of a notes folder")
        worker.signals.result.connect(self._removed)
        self.services.run(worker, "Removing a notes folder")
        return worker

    def _removed(self, text: str) -> None:
        self.services.message.emit(text)
        self.folder_removed.emit(text)

    def shutdown(self) -> None:
        for dialog in (self.folder_dialog, self.confirm_box):
            if dialog is not None:
                dialog.close()
