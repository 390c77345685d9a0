"""The main window: chats and photos a click apart, a status bar for progress, models and errors."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QUrl, Signal
from PySide6.QtGui import QAction, QCloseEvent, QDesktopServices, QKeySequence
from PySide6.QtWidgets import QLabel, QMainWindow, QMessageBox, QTabWidget

from gallery_app import __version__
from gallery_app.core import paths, resources
from gallery_app.core.errors import AppError
from gallery_app.core.models import sources
from gallery_app.core.models.specs import ModelSpec, Role
from gallery_app.ui.qt_chat_pane import ChatPane
from gallery_app.ui.qt_photo_grid import PhotoGrid
from gallery_app.ui.workers import Worker, WorkerContext, WorkerPool


@dataclass(frozen=True)
class ModelState:
    role: Role
    spec: ModelSpec
    origin: str | None  # None: not on this computer
    problem: str | None = None

    @property
    def usable(self) -> bool:
        return self.origin is not None and self.problem is None


def check_models(context: WorkerContext) -> list[ModelState]:
    """Which model each role would use and whether its files are intact (hashes are cached)."""
    states = []
    found_all = sources.statuses()
    for done, (role, spec, found) in enumerate(found_all, start=1):
        problem = None
        if found is not None:
            bad = [c for c in sources.check(found) if not c.status.ok]
            problem = bad[0].detail if bad else None
        states.append(ModelState(role, spec, found.origin() if found else None, problem))
        context.progress(done, len(found_all))
    return states


def describe_model(state: ModelState | None, what: str) -> str:
    if state is None:
        return f"{what}: no model known"
    size = f"{state.spec.size / 1e6:,.0f} MB" if state.spec.size else "size unknown"
    if state.problem:
        return f"{what}: {state.spec.name} is damaged ({state.problem})"
    if state.origin is None:
        return f"{what} needs {state.spec.name} ({size}): gallery-app-cli models fetch {state.spec.key}"
    return f"{what}: {state.spec.name}"


class MainWindow(QMainWindow):
    models_checked = Signal(list)

    def __init__(self):
        super().__init__()
        self.setWindowTitle("Gallery — your chats and photos")
        self.resize(1200, 800)
        self.workers = WorkerPool()
        self.model_states: list[ModelState] = []

        self.chat_pane = ChatPane()
        self.photo_grid = PhotoGrid()
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.chat_pane, "Chats")
        self.tabs.addTab(self.photo_grid, "Photos")
        self.setCentralWidget(self.tabs)

        self.model_label = QLabel("Checking models…")
        self.statusBar().addPermanentWidget(self.model_label)
        self.photo_grid.model.thumbnail_failed.connect(self.show_error_text)
        self._build_menus()
        self._load_demo_data()
        self._check_models()

    # --- menus -----------------------------------------------------------------------------
    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        open_data = QAction("Open &data folder", self)
        open_data.triggered.connect(lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(str(paths.data_dir()))))
        file_menu.addAction(open_data)
        file_menu.addSeparator()
        quit_action = QAction("&Quit", self)
        quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        quit_action.triggered.connect(self.close)
        file_menu.addAction(quit_action)

        view_menu = self.menuBar().addMenu("&View")
        for number, name in enumerate(("&Chats", "&Photos")):
            action = QAction(name, self)
            action.setShortcut(QKeySequence(f"Ctrl+{number + 1}"))
            action.triggered.connect(lambda _checked=False, n=number: self.tabs.setCurrentIndex(n))
            view_menu.addAction(action)

        help_menu = self.menuBar().addMenu("&Help")
        models_action = QAction("&Models…", self)
        models_action.triggered.connect(self.show_models)
        help_menu.addAction(models_action)
        about = QAction("&About", self)
        about.triggered.connect(self.show_about)
        help_menu.addAction(about)

    # --- content ---------------------------------------------------------------------------
    def _load_demo_data(self) -> None:
        self.chat_pane.show_chats(resources.demo_chat_files(), "Demo chats bundled with the app.")
        self.photo_grid.show_photos(resources.demo_photo_files(), "Demo photos bundled with the app.")

    def _check_models(self) -> None:
        worker = Worker(check_models)
        worker.signals.result.connect(self._models_ready)
        worker.signals.error.connect(self.show_error)
        self.workers.start(worker)

    def _models_ready(self, states: list[ModelState]) -> None:
        self.model_states = states
        by_role = {state.role: state for state in states}
        chat_text = " ".join((
            describe_model(by_role.get(Role.TEXT_EMBEDDER), "Message search") + ".",
            describe_model(by_role.get(Role.CHAT_LLM), "Answers") + ".",
        ))
        self.chat_pane.header.setText(self.chat_pane.header.text().split(" · ")[0] + " · " + chat_text)
        clip_missing = [s for s in states if s.role in (Role.CLIP_TEXT, Role.CLIP_VISION) and not s.usable]
        if clip_missing:
            size = sum(s.spec.size or 0 for s in clip_missing) / 1e6
            commands = " and ".join(f"gallery-app-cli models fetch {s.role.value}" for s in clip_missing)
            photo_text = f"Search by meaning needs the CLIP model ({size:,.0f} MB): {commands}"
        else:
            photo_text = "Photo search: CLIP ViT-B/32."
        self.photo_grid.header.setText(self.photo_grid.header.text().split(" · ")[0] + " · " + photo_text)
        ready = sum(state.usable for state in states)
        self.model_label.setText(f"Models: {ready} of {len(states)} ready")
        self.models_checked.emit(states)

    # --- messages --------------------------------------------------------------------------
    def show_error(self, error: AppError) -> None:
        self.show_error_text(str(error))

    def show_error_text(self, text: str) -> None:
        self.statusBar().showMessage(text, 15_000)

    def show_models(self) -> None:
        lines = []
        for state in self.model_states:
            where = state.origin or "not on this computer"
            lines.append(f"<b>{state.role.value}</b> — {state.spec.name}<br>"
                         f"&nbsp;&nbsp;{where}; licence {state.spec.licence}"
                         + (f"<br>&nbsp;&nbsp;<i>{sources.how_to_get(state.spec)}</i>" if state.origin is None else ""))
        QMessageBox.information(self, "Models", "<br><br>".join(lines) or "Still checking…")

    def show_about(self) -> None:
        QMessageBox.about(
            self, "About Gallery",
            f"<b>gallery_app {__version__}</b><p>Your own chats and photos, searchable by meaning. "
            "Everything runs on this computer: no server, no account, no upload.</p>"
            f"<p>Data folder: {paths.data_dir()}<br>Models folder: {paths.models_dir()}</p>",
        )

    def closeEvent(self, event: QCloseEvent) -> None:
        self.workers.cancel_all()
        self.workers.wait(10_000)
        self.photo_grid.model.shutdown()
        super().closeEvent(event)
