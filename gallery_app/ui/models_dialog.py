"""Help → Models…: what each role needs, where it is, and a way to get what is missing.

The dialog never blocks the GUI thread: the check (which may hash a model file the first time),
every download and every "use a local file" (which hashes the chosen file in full) run in workers.
A cancelled or failed download keeps its ``.part`` file, so the next Download continues it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView, QDialog, QDialogButtonBox, QFileDialog, QHBoxLayout, QHeaderView, QLabel, QProgressBar,
    QPushButton, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget,
)

from gallery_app.core import paths
from gallery_app.core.errors import AppError
from gallery_app.core.models import sources
from gallery_app.core.models.memory import this_machine
from gallery_app.core.models.recommend import Recommendation, upgrades
from gallery_app.core.models.specs import ModelSpec, Role
from gallery_app.core.models.status import ModelStatus, model_statuses
from gallery_app.core.units import describe_size
from gallery_app.ui.plain_text import plain_label, tooltip
from gallery_app.ui.workers import Worker, WorkerContext

#: A download's or chosen file's outcome when the model is ready (the others: "cancelled", "error").
READY = "ready"


class _TrackedWorker(Worker):
    """A worker whose end can be waited for from the GUI thread (closing the dialog waits for its own)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.ended = threading.Event()

    def run(self) -> None:
        try:
            super().run()
        finally:
            self.ended.set()


def check_and_advise(context: WorkerContext, settings) -> tuple[list[ModelStatus], list[Recommendation]]:
    """Every role's model status, and the better models this computer could download (a worker's job)."""
    statuses = model_statuses(settings.model_setting, progress=context.progress)
    return statuses, upgrades(this_machine(), {status.role: status.spec for status in statuses})


def _size_text(spec: ModelSpec) -> str:
    return describe_size(spec.size) if spec.size else "—"


def _fetch(context: WorkerContext, spec: ModelSpec) -> sources.ResolvedModel:
    return sources.fetch(spec, progress=context.progress, cancel=lambda: context.cancelled)


def _use_files(context: WorkerContext, spec: ModelSpec, chosen: dict[str, Path]) -> sources.ResolvedModel:
    return sources.use_local_files(spec, chosen)


def match_chosen_files(spec: ModelSpec, chosen: list[str]) -> dict[str, Path]:
    """Map the files the person picked onto the model's file names (any name is fine for a one-file model)."""
    expected = [f.name for f in spec.files]
    if len(expected) == 1 and len(chosen) == 1:
        return {expected[0]: Path(chosen[0])}
    by_name = {Path(p).name: Path(p) for p in chosen}
    missing = [name for name in expected if name not in by_name]
    if missing or len(chosen) != len(expected):
        raise AppError(f"{spec.name} is made of {len(expected)} files: {', '.join(expected)}.",
                       hint="Select all of them together (Ctrl+click), with exactly these names.")
    return {name: by_name[name] for name in expected}


class _RowActions(QWidget):
    """The last cell of a row: Download / Use a local file… or, while downloading, a bar and Cancel."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        self.download = QPushButton("Download")
        self.local = QPushButton("Use a local file…")
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setTextVisible(True)
        self.cancel = QPushButton("Cancel")
        self.note = plain_label()  # errors name files and folders
        self.note.setWordWrap(True)
        self.note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        for widget in (self.download, self.local, self.progress, self.cancel, self.note):
            layout.addWidget(widget)
        self.set_idle(downloadable=False, missing=False)

    def set_idle(self, *, downloadable: bool, missing: bool) -> None:
        self.download.setVisible(missing and downloadable)
        self.local.setVisible(missing)
        self.progress.setVisible(False)
        self.cancel.setVisible(False)

    def set_busy(self, text: str) -> None:
        self.download.setVisible(False)
        self.local.setVisible(False)
        self.progress.setVisible(True)
        self.progress.setValue(0)
        self.progress.setFormat(text)
        self.cancel.setVisible(True)
        self.cancel.setEnabled(True)
        self.note.clear()

    def show_note(self, text: str, *, error: bool = False) -> None:
        self.note.setText(text)
        self.note.setStyleSheet("color: #b00020;" if error else "")


class ModelsDialog(QDialog):
    """The models each role needs: role, name, size, licence, where it is, status, and how to get it."""

    COLUMNS = ("Role", "Model", "Size", "Licence", "Where", "Status", "")

    #: The check finished (list[ModelStatus]); also after every download or chosen file.
    checked = Signal(list)
    #: A download or chosen file finished (role value, outcome: "ready" | "cancelled" | "error").
    job_finished = Signal(str, str)

    def __init__(self, services, parent: QWidget | None = None):
        super().__init__(parent)
        self.services = services
        self.setWindowTitle("Models")
        self.resize(1100, 360)
        self.states: list[ModelStatus] = []
        self._actions: dict[Role, _RowActions] = {}
        self._jobs: dict[Role | tuple[str, Role], Worker] = {}  # ("advice", role): a recommended download
        self._checker: Worker | None = None
        self._recheck_pending = False
        self.last_error: str | None = None
        #: The role whose row is shown highlighted, its Download focused (a photo search that needs CLIP).
        self.focused_role: Role | None = None
        #: Returns the files the person picked for a model (tests replace it; the default asks with a dialog).
        self.choose_files: Callable[[ModelSpec], list[str]] = self._ask_for_files

        intro = QLabel(
            "Each part of the app uses one model. Everything runs on this computer; nothing is downloaded "
            "unless you press Download. A cancelled or interrupted download continues where it stopped.")
        intro.setWordWrap(True)
        self.status_label = plain_label("Checking models…")
        #: Per role, a better model for this computer, with its own Download (filled after each check).
        self.advice: dict[Role, Recommendation] = {}
        self._advice_rows: dict[Role, tuple[QLabel, _RowActions]] = {}
        self._advice_taken: set[Role] = set()  # downloaded: the row stays to say so
        #: The job moving every chat to a downloaded text embedder, once one was.
        self.switching: Worker | None = None
        self.advice_box = QWidget()
        self.advice_layout = QVBoxLayout(self.advice_box)
        self.advice_layout.setContentsMargins(0, 0, 0, 0)
        self.advice_box.setVisible(False)
        self.table = QTableWidget(0, len(self.COLUMNS))
        self.table.setHorizontalHeaderLabels(self.COLUMNS)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        header = self.table.horizontalHeader()
        for column in range(len(self.COLUMNS) - 1):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(len(self.COLUMNS) - 1, QHeaderView.ResizeMode.Stretch)
        folder = plain_label(f"Models folder: {paths.models_dir()}")
        folder.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        self.recheck_button = buttons.addButton("Check again", QDialogButtonBox.ButtonRole.ActionRole)
        self.recheck_button.clicked.connect(self.refresh)

        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.advice_box)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.status_label)
        layout.addWidget(folder)
        layout.addWidget(buttons)
        self.refresh()

    # --- checking --------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Check every role's model again, in a worker (hashing a new file takes seconds)."""
        if self._checker is not None:
            self._recheck_pending = True
            return
        self.status_label.setText("Checking models…")
        self.recheck_button.setEnabled(False)
        worker = _TrackedWorker(check_and_advise, settings=self.services.settings)
        worker.signals.result.connect(self._show_check)
        worker.signals.error.connect(lambda error: self.status_label.setText(str(error)))
        worker.signals.finished.connect(self._check_done)
        self._checker = worker
        self.services.run(worker)

    def _check_done(self) -> None:
        self._checker = None
        self.recheck_button.setEnabled(True)
        if self._recheck_pending:
            self._recheck_pending = False
            self.refresh()

    def _show_check(self, result: tuple[list[ModelStatus], list[Recommendation]]) -> None:
        states, advice = result
        self._show_advice(advice)
        self._show_states(states)

    def _show_states(self, states: list[ModelStatus]) -> None:
        self.states = states
        if self.table.rowCount() != len(states):
            self.table.setRowCount(len(states))
            self._actions.clear()
        for row, state in enumerate(states):
            spec = state.spec
            cells = (state.role.value, spec.name, _size_text(spec), spec.licence, state.where, state.availability.value)
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if column == 4 and state.origin:
                    item.setToolTip(tooltip(state.origin))
                if column == 5:
                    item.setToolTip(tooltip(state.problem or ("" if state.usable else sources.how_to_get(spec))))
                    if not state.usable:
                        item.setForeground(Qt.GlobalColor.darkRed)
                self.table.setItem(row, column, item)
            actions = self._actions.get(state.role)
            if actions is None:
                actions = _RowActions()
                actions.download.clicked.connect(lambda _=False, r=state.role: self.download(r))
                actions.local.clicked.connect(lambda _=False, r=state.role: self.use_local_file(r))
                actions.cancel.clicked.connect(lambda _=False, r=state.role: self.cancel(r))
                self._actions[state.role] = actions
                self.table.setCellWidget(row, len(self.COLUMNS) - 1, actions)
            if state.role not in self._jobs:
                getting = spec.downloadable or sources.can_assemble(spec)
                actions.set_idle(downloadable=getting, missing=not state.usable)
                actions.download.setText("Put together" if sources.can_assemble(spec) else
                                         f"Download {_size_text(spec)}")
                if state.problem and not actions.note.text():
                    actions.show_note(f"Damaged: {state.problem}", error=True)
        self.table.resizeRowsToContents()
        self._show_focus()
        ready = sum(s.usable for s in states)
        self.status_label.setText(f"{ready} of {len(states)} models ready.")
        self.checked.emit(states)

    # --- opened at one model ------------------------------------------------------------------------
    def focus_on(self, role: Role | None) -> None:
        """Bring ``role``'s row into view, highlighted, with its Download button focused, so one click (or
        Enter) gets it; None shows the table as usual. Applied again after every check refills the table."""
        self.focused_role = role
        self._show_focus()

    def _show_focus(self) -> None:
        row = next((i for i, state in enumerate(self.states) if state.role is self.focused_role), None)
        if row is None:
            return  # nothing asked, or the first check has not filled the table yet (it calls again)
        colour = self.palette().highlight().color()
        colour.setAlpha(60)
        for column in range(len(self.COLUMNS) - 1):
            item = self.table.item(row, column)
            if item is not None:  # cells are made anew by each check, so no other row keeps an old highlight
                item.setBackground(colour)
        self.table.scrollToItem(self.table.item(row, 0))
        actions = self._actions[self.focused_role]
        target = actions.download if not actions.download.isHidden() else actions.local
        if not target.isHidden():
            target.setDefault(True)  # Enter presses it
            target.setFocus()

    # --- a better model for this computer ----------------------------------------------------------
    def _show_advice(self, advice: list[Recommendation]) -> None:
        self.advice = {item.role: item for item in advice}
        for role in list(self._advice_rows):
            if role not in self.advice and ("advice", role) not in self._jobs and role not in self._advice_taken:
                label, actions = self._advice_rows.pop(role)
                label.deleteLater()
                actions.deleteLater()
        for role, item in self.advice.items():
            self._advice_taken.discard(role)
            spec = item.recommended
            text = (f"Recommended for this computer ({role.value}): {spec.name} instead of {item.current.name}. "
                    f"{item.reason[0].upper()}{item.reason[1:]}.")
            if role not in self._advice_rows:
                label, actions = plain_label(), _RowActions()
                label.setWordWrap(True)
                actions.download.clicked.connect(lambda _=False, r=role: self.download_recommended(r))
                actions.cancel.clicked.connect(lambda _=False, r=role: self._cancel_job(("advice", r)))
                self.advice_layout.addWidget(label)
                self.advice_layout.addWidget(actions)
                self._advice_rows[role] = (label, actions)
            label, actions = self._advice_rows[role]
            label.setText(text)
            if ("advice", role) not in self._jobs:
                actions.set_idle(downloadable=True, missing=True)
                actions.local.setVisible(False)
                actions.download.setText(f"Download {describe_size(spec.size)}")
        self.advice_box.setVisible(bool(self._advice_rows))

    def advice_actions(self, role: Role) -> _RowActions:
        return self._advice_rows[role][1]

    def download_recommended(self, role: Role) -> Worker | None:
        """Downloads the recommended model; once it is ready it becomes the one the role uses."""
        item = self.advice.get(role)
        if item is None or ("advice", role) in self._jobs:
            return None
        spec = item.recommended
        actions = self.advice_actions(role)
        worker = _TrackedWorker(_fetch, spec)
        actions.set_busy("Starting download… %p%")
        worker.signals.progress.connect(lambda done, total: self._show_progress(actions.progress, done, total))
        worker.signals.result.connect(lambda _resolved: self._recommended_ready(role, spec))
        worker.signals.cancelled.connect(lambda: self._advice_ended(role, "cancelled"))
        worker.signals.error.connect(lambda error: self._advice_ended(role, "error", error))
        self._jobs[("advice", role)] = worker
        self.services.run(worker, f"Downloading {spec.name}")
        return worker

    def _recommended_ready(self, role: Role, spec: ModelSpec) -> None:
        if role is Role.TEXT_EMBEDDER:  # every chat is embedded with it first; search keeps the old one meanwhile
            self.switching = self.services.switch_text_embedder(spec.key)
        else:
            self.services.settings.set_model(role, spec.key)
            self.services.settings.save()
        self._advice_ended(role, READY)

    def _advice_ended(self, role: Role, outcome: str, error: AppError | None = None) -> None:
        self._jobs.pop(("advice", role), None)
        actions = self.advice_actions(role)
        actions.set_idle(downloadable=True, missing=outcome != READY)
        actions.local.setVisible(False)
        if outcome == READY:
            label, _ = self._advice_rows[role]
            item = self.advice.get(role)
            label.setText(f"{item.recommended.name if item else 'The recommended model'} is downloaded ({role.value}).")
            actions.show_note("Ready: every chat is being embedded with it (see the status bar); search switches "
                              "to it when that is done." if role is Role.TEXT_EMBEDDER else
                              "Ready: it is used from now on.")
            self._advice_taken.add(role)
            self.services.release_models()  # the next answer loads it
        elif outcome == "cancelled":
            actions.show_note("Download paused: it continues where it stopped next time you press Download.")
        else:
            actions.show_note(str(error), error=True)
            self.last_error = str(error)
        self.job_finished.emit(role.value, outcome)
        self.refresh()

    def state(self, role: Role) -> ModelStatus | None:
        return next((s for s in self.states if s.role is role), None)

    def actions(self, role: Role) -> _RowActions:
        return self._actions[role]

    # --- getting a model -------------------------------------------------------------------------
    def download(self, role: Role) -> Worker | None:
        state = self.state(role)
        if state is None or role in self._jobs:
            return None
        worker = _TrackedWorker(_fetch, state.spec)
        self._start_job(role, worker, f"Downloading {state.spec.name}", "Starting download… %p%")
        return worker

    def use_local_file(self, role: Role) -> Worker | None:
        state = self.state(role)
        if state is None or role in self._jobs:
            return None
        picked = self.choose_files(state.spec)
        if not picked:
            return None
        try:
            chosen = match_chosen_files(state.spec, picked)
        except AppError as exc:
            self._show_error(role, str(exc))
            return None
        worker = _TrackedWorker(_use_files, state.spec, chosen)
        self._start_job(role, worker, None, "Checking the file…")
        self.actions(role).progress.setRange(0, 0)  # hashing: no progress to show, just busy
        return worker

    def cancel(self, role: Role) -> None:
        self._cancel_job(role)

    def _cancel_job(self, key) -> None:
        worker = self._jobs.get(key)
        if worker is not None:
            worker.cancel()
            actions = self.advice_actions(key[1]) if isinstance(key, tuple) else self.actions(key)
            actions.cancel.setEnabled(False)

    def _start_job(self, role: Role, worker: Worker, label: str | None, text: str) -> None:
        actions = self.actions(role)
        actions.set_busy(text)
        actions.progress.setRange(0, 1000)
        worker.signals.progress.connect(lambda done, total, r=role: self._progress(r, done, total))
        worker.signals.result.connect(lambda _resolved, r=role: self._job_ended(r, READY))
        worker.signals.cancelled.connect(lambda r=role: self._job_ended(r, "cancelled"))
        worker.signals.error.connect(lambda error, r=role: self._job_ended(r, "error", error))
        self._jobs[role] = worker
        self.services.run(worker, label)

    def _progress(self, role: Role, done: int, total: int) -> None:
        self._show_progress(self.actions(role).progress, done, total)

    @staticmethod
    def _show_progress(bar: QProgressBar, done: int, total: int) -> None:
        if total > 0:
            bar.setValue(min(1000, done * 1000 // total))
            bar.setFormat(f"{describe_size(done)} of {describe_size(total)} (%p%)")

    def _job_ended(self, role: Role, outcome: str, error: AppError | None = None) -> None:
        self._jobs.pop(role, None)
        actions = self.actions(role)
        actions.progress.setRange(0, 1000)
        if outcome == READY:
            actions.show_note("Ready.")
            self.services.release_models()  # the next use loads the new model
        elif outcome == "cancelled":
            actions.show_note("Download paused: it continues where it stopped next time you press Download.")
        else:
            self._show_error(role, str(error))
        state = self.state(role)
        if state is not None:
            actions.set_idle(downloadable=state.spec.downloadable or sources.can_assemble(state.spec),
                             missing=outcome != READY)
        self.job_finished.emit(role.value, outcome)
        self.refresh()

    def _show_error(self, role: Role, text: str) -> None:
        self.last_error = text
        self.actions(role).show_note(text, error=True)

    def _ask_for_files(self, spec: ModelSpec) -> list[str]:
        names = " ".join(f.name for f in spec.files)
        suffixes = " ".join(sorted({f"*{Path(f.name).suffix}" for f in spec.files}))
        files, _ = QFileDialog.getOpenFileNames(
            self, f"Choose the file{'s' if len(spec.files) > 1 else ''} of {spec.name} ({names})", str(Path.home()),
            f"Model files ({suffixes});;All files (*)")
        return files

    # --- closing ---------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return bool(self._jobs) or self._checker is not None

    def shutdown(self, timeout_ms: int = 10_000) -> None:
        """Cancel downloads (their .part files stay for next time) and wait for this dialog's workers."""
        workers = list(self._jobs.values()) + ([self._checker] if self._checker else [])
        for worker in workers:
            worker.cancel()
        self._recheck_pending = False
        deadline = time.monotonic() + timeout_ms / 1000
        for worker in workers:
            if isinstance(worker, _TrackedWorker):
                worker.ended.wait(max(0.0, deadline - time.monotonic()))

    # Closing the dialog only hides it: a download keeps going (the status bar shows it, with Cancel),
    # and hashing a big file cannot be interrupted, so waiting here would freeze the window.
    # The main window calls shutdown() when it closes.
