"""The main window: chats and photos a click apart, one status bar for progress, models and errors.

The window itself only arranges things: each pane talks to the core through workers, and long jobs
announce themselves through ``Services.run`` so their progress, Cancel and errors show in one place.
On the first start with an empty database it loads the bundled demo chats and photos.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, QUrl, Signal
from PySide6.QtGui import QAction, QCloseEvent, QDesktopServices, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import QFileDialog, QLabel, QMainWindow, QMessageBox, QTabWidget, QWidget

from gallery_app import __version__
from gallery_app.core import paths
from gallery_app.core.chat.export_file import is_chat_export
from gallery_app.core.demo import prepare_demo
from gallery_app.core.errors import AppError
from gallery_app.core.models.recommend import Recommendation
from gallery_app.core.models.specs import Role
from gallery_app.core.models.status import ModelStatus, describe_model, needs_attention
from gallery_app.core.photos.chat_photos import ChatPhoto
from gallery_app.core.photos.preparing import is_photo_file
from gallery_app.ui.chat import notes_jobs
from gallery_app.ui.chat.pane import ChatPane
from gallery_app.ui.chat.viewer import ChatViewer
from gallery_app.ui.licences_dialog import LicencesDialog
from gallery_app.ui.models_dialog import ModelsDialog, check_and_advise
from gallery_app.ui.photos.pane import PhotoPane
from gallery_app.ui.plain_text import escape, tooltip
from gallery_app.ui.services import Services
from gallery_app.ui.settings import Settings
from gallery_app.ui.settings_dialog import SettingsDialog
from gallery_app.ui.task_bar import TaskBar
from gallery_app.ui.workers import Worker, WorkerContext

#: QSettings key: the models dialog was offered once; later starts only show the status bar line.
MODELS_OFFERED_KEY = "first_run/models_dialog_offered"
#: The recommended model the status bar last told about (it says so once per model).
ADVICE_SHOWN_KEY = "models/recommendation_shown"


def _demo_job(context: WorkerContext, services: Services) -> list[str]:
    with services.connect() as conn:
        return prepare_demo(conn, services.text_embedder, services.clip_vision, progress=context.progress,
                            cancel=lambda: context.cancelled)


class MainWindow(QMainWindow):
    models_checked = Signal(list)
    demo_ready = Signal(list)

    def __init__(self, services: Services | None = None):
        super().__init__()
        self.setWindowTitle("Gallery — your chats and photos")
        self.resize(1280, 820)
        self.setAcceptDrops(True)
        self.services = services or Services(Settings.load())
        self.model_states: list[ModelStatus] = []
        self.licences_dialog: LicencesDialog | None = None
        self.models_dialog: ModelsDialog | None = None
        self._closed = False

        self.chat_pane = ChatPane(self.services)
        self.photo_pane = PhotoPane(self.services)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.chat_pane, "Chats")
        self.tabs.addTab(self.photo_pane, "Photos")
        self.setCentralWidget(self.tabs)
        # A chat photo's *Open in chat* reads its message in the chat; "Similar photos" of a photo opened
        # from a chat shows them in the gallery.
        self.photo_pane.open_in_chat.connect(self.open_in_chat)
        # A photo search without CLIP offers the model: Help → Models at its row, Download one click away.
        self.photo_pane.models_wanted.connect(lambda role: self.show_models(focus=role))
        self.chat_pane.similar_photos_requested.connect(
            lambda photo_id: self._show_photos(lambda: self.photo_pane.show_similar(photo_id))())

        self.task_bar = TaskBar(self.statusBar())
        self.statusBar().addPermanentWidget(self.task_bar)
        self.model_label = QLabel("Checking models…")
        self.statusBar().addPermanentWidget(self.model_label)
        self.services.task_started.connect(self.task_bar.track)
        self.services.message.connect(lambda text: self.statusBar().showMessage(text, 10_000))
        self.services.models_reset.connect(self.check_models)
        self._build_menus()
        self._prepare_demo()
        self.check_models()

    # --- menus -----------------------------------------------------------------------------
    def _action(self, menu, text: str, slot, shortcut=None) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(lambda _checked=False: slot())
        menu.addAction(action)
        return action

    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        self._action(file_menu, "&Import WhatsApp chat…", self.choose_chat_files, QKeySequence.StandardKey.Open)
        self._action(file_menu, "&Add photo folder…", self._show_photos(self.photo_pane.choose_folder), "Ctrl+Shift+O")
        self.add_notes_action = self._action(file_menu, "Add &notes folder…", self.choose_notes_folder,
                                             "Ctrl+Shift+N")
        self._action(file_menu, "&Upload photo…", self._show_photos(self.photo_pane.choose_uploads), "Ctrl+U")
        self._action(file_menu, "Search with the &camera…", self._show_photos(self.photo_pane.open_camera), "Ctrl+Shift+C")
        file_menu.addSeparator()
        self._action(file_menu, "Open &data folder",
                     lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(str(paths.data_dir()))))
        self._action(file_menu, "&Settings…", self.show_settings, "Ctrl+,")
        file_menu.addSeparator()
        self._action(file_menu, "&Quit", self.close, QKeySequence.StandardKey.Quit)

        chat_menu = self.menuBar().addMenu("&Chat")
        self._action(chat_menu, "&New conversation", self._show_chats(self.chat_pane.new_conversation), "Ctrl+N")
        self._action(chat_menu, "&Stop answering", self.chat_pane.stop, "Ctrl+.")

        view_menu = self.menuBar().addMenu("&View")
        self._action(view_menu, "&Chats", lambda: self.tabs.setCurrentIndex(0), "Ctrl+1")
        self._action(view_menu, "&Photos", lambda: self.tabs.setCurrentIndex(1), "Ctrl+2")
        self._action(view_menu, "&Duplicate photos", self._show_photos(self.photo_pane.show_duplicates), "Ctrl+D")

        help_menu = self.menuBar().addMenu("&Help")
        self._action(help_menu, "&Models…", self.show_models)
        self._action(help_menu, "Third-party &licences…", self.show_licences)
        self._action(help_menu, "&About Gallery", self.show_about)

    def _show_chats(self, then):
        return lambda: (self.tabs.setCurrentWidget(self.chat_pane), then())

    def _show_photos(self, then):
        return lambda: (self.tabs.setCurrentWidget(self.photo_pane), then())

    def open_in_chat(self, sent: ChatPhoto) -> ChatViewer:
        """The chat tab, and the chat viewer at the message that sent a photo (``ChatPhoto``)."""
        self.tabs.setCurrentWidget(self.chat_pane)
        return self.chat_pane.show_chat_photo(sent)

    def choose_notes_folder(self):
        """File → Add notes folder…: the chats tab (the folder joins its source list) and the folder chooser."""
        self.tabs.setCurrentWidget(self.chat_pane)
        return self.chat_pane.notes.choose_folder()

    def add_notes_folder(self, folder: Path) -> Worker:
        self.tabs.setCurrentWidget(self.chat_pane)
        return self.chat_pane.notes.add_folder(folder)

    def choose_chat_files(self) -> None:
        files, _ = QFileDialog.getOpenFileNames(self, "Import WhatsApp chats", str(Path.home()),
                                                "WhatsApp exports (*.txt *.zip);;All files (*)")
        if files:
            self.tabs.setCurrentWidget(self.chat_pane)
            self.chat_pane.import_files([Path(f) for f in files])

    # --- drag and drop anywhere on the window --------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls() and any(url.isLocalFile() for url in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        dropped = [Path(url.toLocalFile()) for url in event.mimeData().urls() if url.isLocalFile()]
        event.acceptProposedAction()
        self.open_paths(dropped)

    def open_paths(self, dropped: list[Path]) -> Worker | None:
        """Chats are imported, photos searched by and added, folders indexed; anything else is explained.

        A folder (dropped outside the chat pane, which takes every folder as notes) is a notes folder when
        it holds more notes and documents than photos (``core.folder_kind``), else a photo folder; that is
        decided on a worker (it lists files), returned."""
        chats = [p for p in dropped if p.is_file() and is_chat_export(p)]
        photos = [p for p in dropped if p.is_file() and is_photo_file(p)]
        folders = [p for p in dropped if p.is_dir()]
        others = [p for p in dropped if p not in chats and p not in photos and p not in folders]
        if chats:
            self.tabs.setCurrentWidget(self.chat_pane)
            self.chat_pane.import_files(chats)
        if photos:
            self.tabs.setCurrentWidget(self.photo_pane)
            self.photo_pane.upload(photos)
        if others:
            names = ", ".join(p.name for p in others[:3]) + (" …" if len(others) > 3 else "")
            self.statusBar().showMessage(
                f"{names}: not a WhatsApp export (_chat.txt or .zip) or a photo, so nothing was done with it. "
                "Notes and documents are added by their folder: File → Add notes folder…", 15_000)
        if not folders:
            return None
        worker = Worker(notes_jobs.sort_folders, folders)
        worker.signals.result.connect(self._folders_sorted)
        return self.services.run(worker)

    def _folders_sorted(self, sorted_folders: tuple[list[Path], list[Path]]) -> None:
        notes, photos = sorted_folders
        if self._closed:
            return
        for folder in photos:
            self.tabs.setCurrentWidget(self.photo_pane)
            self.photo_pane.add_folder(folder)
        for folder in notes:
            self.add_notes_folder(folder)

    # --- first start, models -------------------------------------------------------------------
    def _prepare_demo(self) -> None:
        worker = Worker(_demo_job, self.services).writing("the demo setup")
        worker.signals.result.connect(self._demo_prepared)
        # Photo folders are rescanned only when added again; notes change by the day, so every start looks for
        # what changed in them, once the demo (which may load the same embedder) is in.
        worker.signals.finished.connect(lambda: None if self._closed else self.chat_pane.notes.rescan_all())
        self.services.run(worker, "Preparing the demo chats and photos")

    def _demo_prepared(self, lines: list[str]) -> None:
        if lines and not self._closed:
            self.services.data_changed.emit("chats")
            self.services.data_changed.emit("photos")
            self.statusBar().showMessage("Demo data ready: " + " ".join(lines), 15_000)
        self.demo_ready.emit(lines)

    def check_models(self) -> None:
        worker = Worker(check_and_advise, self.services.settings)
        worker.signals.result.connect(self._models_ready)
        worker.signals.error.connect(self._models_check_failed)
        self.services.run(worker)

    def _models_check_failed(self, error: AppError) -> None:
        self.model_label.setText("Models: check failed")
        self.model_label.setToolTip(tooltip(str(error)))
        self.show_error(error)

    def _models_ready(self, result: tuple[list[ModelStatus], list[Recommendation]]) -> None:
        states, advice = result
        if self._closed:  # delivered while closing (the close waits for every job's results)
            return
        self.model_states = states
        by_role = {state.role: state for state in states}
        ready = sum(state.usable for state in states)
        self.model_label.setText(f"Models: {ready} of {len(states)} ready")
        self.model_label.setToolTip(tooltip("\n".join(
            describe_model(by_role.get(role), what) for role, what in (
                (Role.TEXT_EMBEDDER, "Message search"), (Role.CHAT_LLM, "Answers"),
                (Role.CLIP_VISION, "Photo search (images)"), (Role.CLIP_TEXT, "Photo search (words)")))))
        self.models_checked.emit(states)
        settings = QSettings()
        if (needs_attention(states) or advice) and not settings.value(MODELS_OFFERED_KEY, False, type=bool):
            settings.setValue(MODELS_OFFERED_KEY, True)  # the first start: the dialog shows what to get
            self.show_models()
        elif advice and settings.value(ADVICE_SHOWN_KEY, "") != advice[0].recommended.key:
            settings.setValue(ADVICE_SHOWN_KEY, advice[0].recommended.key)  # said once per model
            better = advice[0]
            self.statusBar().showMessage(
                f"{better.recommended.name} fits this computer better than {better.current.name} (it "
                f"{better.role.describe()}): Help → Models… downloads it.", 20_000)

    def show_models(self, focus: Role | None = None) -> ModelsDialog:
        """Help → Models…; ``focus``: the role whose row is brought into view with its Download button focused."""
        if self.models_dialog is None:
            self.models_dialog = ModelsDialog(self.services, self)
        _bring_to_front(self.models_dialog)
        self.models_dialog.focus_on(focus)
        self.models_dialog.refresh()
        return self.models_dialog

    def show_settings(self) -> None:
        dialog = SettingsDialog(self.services, self)
        dialog.exec()
        dialog.deleteLater()

    def show_error(self, error: AppError) -> None:
        self.statusBar().showMessage(f"⚠ {error}", 15_000)

    def show_licences(self) -> LicencesDialog:
        """Help → Third-party licences…: one dialog, brought to the front when it is already open."""
        if self.licences_dialog is None:
            self.licences_dialog = LicencesDialog(self.services, self)
        _bring_to_front(self.licences_dialog)
        return self.licences_dialog

    def show_about(self) -> None:
        QMessageBox.about(
            self, "About Gallery",
            f"<b>gallery_app {__version__}</b><p>Your own chats and photos, searchable by meaning. "
            "Everything runs on this computer: no server, no account, no upload.</p>"
            f"<p>Data folder: {escape(paths.data_dir())}<br>Models folder: {escape(paths.models_dir())}</p>"
            "<p>Demo photos: scikit-image sample data (BSD-3-Clause).</p>"
            "<p>Free software under the MIT licence; the packages it is built on: Help → Third-party licences….</p>",
        )

    def closeEvent(self, event: QCloseEvent) -> None:
        if self._closed:
            return super().closeEvent(event)
        self._closed = True
        # Releasing the models announces models_reset, which would start a fresh model check.
        self.services.models_reset.disconnect(self.check_models)
        self.chat_pane.stop()
        if self.models_dialog is not None:
            self.models_dialog.shutdown()
        self.services.workers.cancel_all()
        # Every job ended and its last signal was delivered: no slot runs after the models are freed.
        finished = self.services.workers.wait(15_000)
        self.photo_pane.shutdown()
        self.chat_pane.notes.shutdown()
        if finished:
            self.services.shutdown()
        else:  # a job that cannot stop mid-step still holds its model; it is freed when the job ends
            self.services.release_models()
        super().closeEvent(event)


def _bring_to_front(dialog: QWidget) -> None:
    """Shows a dialog the window keeps (opened once, reused), above the window and with the focus."""
    dialog.show()
    dialog.raise_()
    dialog.activateWindow()
