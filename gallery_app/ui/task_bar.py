"""The status bar's one place for long jobs: what runs, how far it is, Cancel, and what went wrong."""

from __future__ import annotations

from dataclasses import dataclass, field

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QStatusBar, QWidget

from gallery_app.core.errors import AppError
from gallery_app.core.eta import TimeLeft, describe_time_left
from gallery_app.ui.workers import Worker

ERROR_SHOWN_MS = 20_000


@dataclass(eq=False)
class _Task:
    label: str
    worker: Worker
    #: The step it reported last ("Adding photos…"), shown after the label.
    step: str = ""
    #: The time left of the current step (each step's work goes at its own speed).
    time_left: TimeLeft = field(default_factory=TimeLeft)

    @property
    def title(self) -> str:
        return f"{self.label} — {self.step}" if self.step else f"{self.label}…"


class TaskBar(QWidget):
    """Shows the most recent running job; older ones keep running and are counted ("+1 more")."""

    def __init__(self, status_bar: QStatusBar):
        super().__init__(status_bar)
        self.status_bar = status_bar
        self._tasks: list[_Task] = []
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
        task = _Task(label, worker)
        self._tasks.append(task)
        # A queued writer's turn came: it no longer says what it waits for.
        worker.signals.started.connect(lambda t=task: self._show_current() if self._tasks[-1:] == [t] else None)
        worker.signals.step.connect(lambda text, t=task: self._step(t, text))
        worker.signals.progress.connect(lambda done, total, t=task: self._progress(t, done, total))
        worker.signals.error.connect(lambda error, t=task: self._failed(t, error))
        worker.signals.cancelled.connect(lambda t=task: self.status_bar.showMessage(f"{t.label}: cancelled.", 5_000))
        worker.signals.finished.connect(lambda t=task: self._finished(t))
        self._show_current()

    def cancel_current(self) -> None:
        if self._tasks:
            self._tasks[-1].worker.cancel()
            self.cancel_button.setEnabled(False)

    @property
    def running(self) -> int:
        return len(self._tasks)

    def _step(self, task: _Task, text: str) -> None:
        task.step, task.time_left = text, TimeLeft()
        if self._tasks and self._tasks[-1] is task:
            self._show_current()

    def _progress(self, task: _Task, done: int, total: int) -> None:
        if self._tasks and self._tasks[-1] is task:
            self.progress.setRange(0, max(total, 0))
            self.progress.setValue(min(done, total) if total else 0)
            if total:
                left = describe_time_left(task.time_left.update(done, total)) if done < total else ""
                self.progress.setFormat(f"{done:,} / {total:,}")
                self.label.setText(task.title + (f" {left}" if left else ""))

    def _failed(self, task: _Task, error: AppError) -> None:
        text = str(error)
        self.last_error = f"{task.label}: {text}"
        self.status_bar.showMessage(f"⚠ {self.last_error}", ERROR_SHOWN_MS)

    def _finished(self, task: _Task) -> None:
        if task in self._tasks:
            self._tasks.remove(task)
        self._show_current()

    def _show_current(self) -> None:
        if not self._tasks:
            self.setVisible(False)
            return
        task = self._tasks[-1]
        more = f"  (+{len(self._tasks) - 1} more)" if len(self._tasks) > 1 else ""
        waiting = task.worker.waiting_note()
        self.label.setText((f"{task.label} — {waiting}" if waiting else task.title) + more)
        self.progress.setRange(0, 0)  # busy until the first progress report (of this step)
        self.progress.setFormat("")
        self.cancel_button.setEnabled(not task.worker.is_cancelled)
        self.setVisible(True)
