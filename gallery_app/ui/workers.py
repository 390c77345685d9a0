"""Long work off the GUI thread: a QRunnable that runs a function and reports through signals.

The function receives a ``WorkerContext`` and may call ``context.progress(done, total)`` and
check ``context.cancelled`` between items (or tokens). If it returns a generator, each yielded
value is emitted as ``yielded``, which makes streaming (LLM tokens, search results) natural.
Errors arrive as ``error(AppError)``; anything else unexpected is wrapped so the UI can show it.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Callable
from types import GeneratorType
from typing import Any

import shiboken6
from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from gallery_app.core.errors import AppError, Cancelled

log = logging.getLogger(__name__)


class WorkerSignals(QObject):
    started = Signal()
    progress = Signal(int, int)
    yielded = Signal(object)
    result = Signal(object)
    error = Signal(object)  # an AppError
    cancelled = Signal()
    finished = Signal()


class WorkerContext:
    def __init__(self, signals: WorkerSignals, cancel_event: threading.Event):
        self._signals = signals
        self._cancel_event = cancel_event

    @property
    def cancelled(self) -> bool:
        return self._cancel_event.is_set()

    def progress(self, done: int, total: int) -> None:
        self._signals.progress.emit(int(done), int(total))


class Worker(QRunnable):
    def __init__(self, function: Callable[..., Any], *args: Any, **kwargs: Any):
        super().__init__()
        self.signals = WorkerSignals()
        self._function = function
        self._args = args
        self._kwargs = kwargs
        self._cancel_event = threading.Event()
        # Workers are owned by Python, not by the pool, so signals stay valid until `finished`.
        self.setAutoDelete(False)

    def cancel(self) -> None:
        self._cancel_event.set()

    @property
    def is_cancelled(self) -> bool:
        return self._cancel_event.is_set()

    def run(self) -> None:
        signals = self.signals
        if not shiboken6.isValid(signals):
            return  # its owner went away (the window closed) before the pool got to it: nobody to tell
        signals.started.emit()
        context = WorkerContext(signals, self._cancel_event)
        try:
            outcome = self._function(context, *self._args, **self._kwargs)
            if isinstance(outcome, GeneratorType):
                for item in outcome:
                    if self._cancel_event.is_set():
                        outcome.close()
                        raise Cancelled()
                    signals.yielded.emit(item)
                outcome = None
            if self._cancel_event.is_set():
                raise Cancelled()
            signals.result.emit(outcome)
        except Cancelled:
            signals.cancelled.emit()
        except AppError as exc:
            signals.error.emit(exc)
        except Exception as exc:  # a bug: logged in full, and still shown where errors are shown
            log.exception("worker %s failed", getattr(self._function, "__name__", self._function))
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            signals.error.emit(AppError(f"Something went wrong: {detail}"))
        finally:
            # PySide's pool keeps every started runnable alive; let go of what it was given (a camera
            # frame, a list of photos, a model) so only the small Worker shell remains.
            self._function = self._args = self._kwargs = None
            signals.finished.emit()


class WorkerPool:
    """Keeps running workers alive and lets the window cancel and wait for all of them on close."""

    def __init__(self, pool: QThreadPool | None = None):
        self.pool = pool or QThreadPool.globalInstance()
        self._running: set[Worker] = set()

    def start(self, worker: Worker) -> Worker:
        self._running.add(worker)
        worker.signals.finished.connect(lambda: self._running.discard(worker))
        self.pool.start(worker)
        return worker

    def cancel_all(self) -> None:
        for worker in list(self._running):
            worker.cancel()

    def wait(self, timeout_ms: int = 30_000) -> bool:
        return self.pool.waitForDone(timeout_ms)

    @property
    def active(self) -> int:
        return len(self._running)
