"""The status bar's one place for long jobs: what runs, how far it is, Cancel, and what went wrong."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QStatusBar, QWidget

from gallery_app.core.errors import AppError
from gallery_app.core.eta import TimeLeft, describe_time_left
from gallery_app.ui.workers import Worker

ERROR_SHOWN_MS = 20_000


class TaskBar(QWidget):
    """Shows the most recent running job; older ones keep running and are counted ("+1 more")."""

    def __init__(self, status_bar: QStatusBar):
        super().__init__(status_bar)
        self.status_bar = status_bar
        self._tasks: list[tuple[str, Worker, TimeLeft]] = []
        self.label = QLabel()
        self.label.setTextFormat(Qt.TextFormat.PlainText)  # labels carry file and folder names
        self.progress = QProgressBar()
        self.progress.setFixedWidth(180)
        self.progress.setTextVisible(True)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setFlat(True)
        self.cancel_button.clicked.connect(self.cancel_current)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label)
        layout.addWidget(self.progress)
        layout.addWidget(self.cancel_button)
        self.last_error: str | None = None
        self.setVisible(False)

    def track(self, label: str, worker: Worker) -> None:
        entry = (label, worker, TimeLeft())
        self._tasks.append(entry)
        # A queued writer's turn came: it no longer says what it waits for.
        worker.signals.started.connect(lambda e=entry: self._show_current() if self._tasks[-1:] == [e] else None)
        worker.signals.progress.connect(lambda done, total, e=entry: self._progress(e, done, total))
        worker.signals.error.connect(lambda error, e=entry: self._failed(e, error))
        worker.signals.cancelled.connect(lambda e=entry: self.status_bar.showMessage(f"{e[0]}: cancelled.", 5_000))
        worker.signals.finished.connect(lambda e=entry: self._finished(e))
        self._show_current()

    def cancel_current(self) -> None:
        if self._tasks:
            self._tasks[-1][1].cancel()
            self.cancel_button.setEnabled(False)

    @property
    def running(self) -> int:
        return len(self._tasks)

    def _progress(self, entry, done: int, total: int) -> None:
        if self._tasks and self._tasks[-1] is entry:
            self.progress.setRange(0, max(total, 0))
            self.progress.setValue(min(done, total) if total else 0)
            if total:
                left = describe_time_left(entry[2].update(done, total)) if done < total else ""
                self.progress.setFormat(f"{done:,} / {total:,}")
                self.label.setText(entry[0] + "…" + (f" {left}" if left else ""))

    def _failed(self, entry, error: AppError) -> None:
        text = str(error)
        self.last_error = f"{entry[0]}: {text}"
        self.status_bar.showMessage(f"⚠ {self.last_error}", ERROR_SHOWN_MS)

    def _finished(self, entry) -> None:
        if entry in self._tasks:
            self._tasks.remove(entry)
        self._show_current()

    def _show_current(self) -> None:
        if not self._tasks:
            self.setVisible(False)
            return
        label, worker, _time_left = self._tasks[-1]
        more = f"  (+{len(self._tasks) - 1} more)" if len(self._tasks) > 1 else ""
        waiting = worker.waiting_note()
        self.label.setText(label + (f" — {waiting}" if waiting else "…") + more)
        self.progress.setRange(0, 0)  # busy until the first progress report
        self.progress.setFormat("")
        self.cancel_button.setEnabled(not worker.is_cancelled)
        self.setVisible(True)

