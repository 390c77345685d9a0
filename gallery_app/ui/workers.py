"""Long work off the GUI thread: a QRunnable that runs a function and reports through signals.

The function receives a ``WorkerContext`` and may call ``context.progress(done, total)``, name the
step it is on with ``context.step("Adding photos…")`` and check ``context.cancelled`` between items
(or tokens). If it returns a generator, each yielded
value is emitted as ``yielded``, which makes streaming (LLM tokens, search results) natural.
Errors arrive as ``error(AppError)``; anything else unexpected is wrapped so the UI can show it.
A job that writes to the database is marked ``Worker(...).writing("the chat import")``: the pool runs
such jobs one at a time, in the order they were started, and a queued one says what it waits for.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import traceback
from collections import deque
from collections.abc import Callable
from types import GeneratorType
from typing import Any

import shiboken6
from PySide6.QtCore import QCoreApplication, QDeadlineTimer, QObject, QRunnable, Qt, QThread, QThreadPool, Signal

from gallery_app.core.errors import AppError, Cancelled

log = logging.getLogger(__name__)

#: How much lower than the GUI thread a pool thread runs (Linux nice steps). An import keeps every core
#: busy (the worker, the embedder's threads); the GUI thread, and the helper threads Qt paints with,
#: should not queue behind it for a core. (With the kernel's autogroups, on by default on desktops, this
#: shares the CPU among the app's own threads; other programs see the app's share unchanged.)
WORKER_NICENESS = 10
#: How long a Python thread keeps the GIL while another thread waits for it (CPython's default is 5 ms).
GIL_SWITCH_INTERVAL_S = 0.001
_lowered = threading.local()


def _run_below_the_gui_thread() -> None:
    """Lowers this pool thread's priority once; threads it starts (ONNX Runtime's, a tokenizer's) inherit it."""
    if getattr(_lowered, "done", False):
        return
    _lowered.done = True
    try:
        if sys.platform.startswith("linux"):  # a thread id names one thread here, not the process
            thread = threading.get_native_id()
            # Relative to the thread that made it (the GUI thread's niceness), as far as Linux allows (19).
            os.setpriority(os.PRIO_PROCESS, thread, min(19, os.getpriority(os.PRIO_PROCESS, thread) + WORKER_NICENESS))
        else:
            QThread.currentThread().setPriority(QThread.Priority.LowPriority)
    except OSError as exc:  # a sandbox may forbid it; the work still runs, only at normal priority
        log.debug("could not lower a worker thread's priority: %s", exc)


class WorkerSignals(QObject):
    started = Signal()
    progress = Signal(int, int)
    #: The step the job is on now ("Adding photos…"): the status bar's label follows it.
    step = Signal(str)
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

    def step(self, text: str) -> None:
        """The job moved on to another step; its progress from here counts that step's work."""
        self._signals.step.emit(text)


class Worker(QRunnable):
    #: What the job writes to the database ("the chat import"), or None when it only reads.
    writes: str | None = None

    def __init__(self, function: Callable[..., Any], *args: Any, **kwargs: Any):
        super().__init__()
        self.signals = WorkerSignals()
        self._function = function
        self._args = args
        self._kwargs = kwargs
        self._cancel_event = threading.Event()
        self._pool: WorkerPool | None = None
        # Workers are owned by Python, not by the pool, so signals stay valid until `finished`.
        self.setAutoDelete(False)

    def writing(self, what: str) -> Worker:
        """Marks the job as one that writes ("the chat import"): it waits for the writer before it."""
        self.writes = what
        return self

    @property
    def waiting_for(self) -> Worker | None:
        """The writer just ahead of this one, or None while it runs (or when it never waited)."""
        return self._pool.waiting(self) if self._pool is not None else None

    def waiting_note(self) -> str | None:
        """"Waiting for the chat import to finish…" while queued behind another writer, else None."""
        ahead = self.waiting_for
        return f"Waiting for {ahead.writes} to finish…" if ahead is not None else None

    def cancel(self) -> None:
        self._cancel_event.set()
        if self._pool is not None:
            self._pool._cancelled(self)

    @property
    def is_cancelled(self) -> bool:
        return self._cancel_event.is_set()

    def run(self) -> None:
        _run_below_the_gui_thread()
        try:
            self._run()
        finally:
            if self._pool is not None:
                self._pool._run_ended(self)

    def _run(self) -> None:
        signals = self.signals
        if not shiboken6.isValid(signals):
            return  # its owner went away (the window closed) before the pool got to it: nobody to tell
        if self._cancel_event.is_set():  # cancelled while it waited for its turn: nothing was done
            self._function = self._args = self._kwargs = None
            signals.cancelled.emit()
            signals.finished.emit()
            return
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
            # A Cancel that came after the work ended changes nothing: what it did (an import, a switch of
            # embedder) is done and committed, so it is reported as done.
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


class WorkerPool(QObject):
    """Runs workers on a thread pool; jobs that write to the database take turns, in the order started.

    A worker is counted in ``active`` from ``start`` until its last signal has been delivered on the
    GUI thread, so ``wait()`` returning True means every job has ended and its results have arrived.
    Writers (``Worker.writing``) run one at a time: SQLite allows one writer, and a second one would
    wait at the database and fail after the busy timeout. Readers and searches run beside them.
    """

    #: (worker) from the worker's thread after its `finished`; received on the pool's (GUI) thread.
    _ended = Signal(object)

    def __init__(self, pool: QThreadPool | None = None):
        super().__init__()
        self.pool = pool or QThreadPool.globalInstance()
        # A job's Python holds the GIL for 5 ms at a time by default, and the GUI thread needs it for every
        # signal, paint and timer: one frame could wait for it ten times over (gaps of 50-120 ms in an import).
        sys.setswitchinterval(min(sys.getswitchinterval(), GIL_SWITCH_INTERVAL_S))
        self._running: set[Worker] = set()
        self._lock = threading.Lock()  # guards the writers' lane, changed from worker threads too
        self._writer: Worker | None = None
        self._queued: deque[Worker] = deque()
        self._ended.connect(self._forget, Qt.ConnectionType.QueuedConnection)

    def start(self, worker: Worker) -> Worker:
        self._running.add(worker)
        worker._pool = self
        with self._lock:
            if worker.writes and self._writer is not None:
                self._queued.append(worker)
                return worker
            if worker.writes:
                self._writer = worker
        self.pool.start(worker)
        return worker

    def waiting(self, worker: Worker) -> Worker | None:
        """The writer just ahead of ``worker`` in the queue, or None once it runs (or if it never waits)."""
        with self._lock:
            if worker not in self._queued:
                return None
            place = self._queued.index(worker)
            return self._queued[place - 1] if place else self._writer

    def _cancelled(self, worker: Worker) -> None:
        """A queued writer that is cancelled ends now (it skips its work), not after the writer ahead."""
        with self._lock:
            if worker not in self._queued:
                return
            self._queued.remove(worker)
        self.pool.start(worker)

    def _run_ended(self, worker: Worker) -> None:
        """On the worker's thread, right after its last signal: the next writer may start."""
        follower = None
        with self._lock:
            if worker is self._writer:
                self._writer = follower = self._queued.popleft() if self._queued else None
        if follower is not None:
            self.pool.start(follower)
        # Queued after every signal the worker sent, so it is delivered after all of them.
        self._ended.emit(worker)

    def _forget(self, worker: Worker) -> None:
        self._running.discard(worker)

    def cancel_all(self) -> None:
        for worker in list(self._running):
            worker.cancel()

    def wait(self, timeout_ms: int = 30_000) -> bool:
        """Until every job has ended and its signals have been delivered (call it on the GUI thread).

        The signals are delivered here, so slots run; one that starts another job is waited for too.
        """
        deadline = QDeadlineTimer(timeout_ms)
        while True:
            if not self.pool.waitForDone(max(0, deadline.remainingTime())):
                return False
            if QThread.currentThread() is not self.thread():
                return True  # the deliveries happen on the GUI thread, which is not this one
            QCoreApplication.sendPostedEvents()
            if not self._running:
                return True
            if deadline.hasExpired():
                return False

    @property
    def active(self) -> int:
        return len(self._running)
