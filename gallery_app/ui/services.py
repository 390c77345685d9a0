"""What the window's panes share: the database, the models, the settings and the worker pool.

Models are loaded on first use, on whichever worker thread first needs them (loading takes seconds
and must never happen on the GUI thread), once, behind a lock. Each worker opens its own database
connection (``connect()``) and closes it when done: SQLite connections are cheap, and WAL lets
readers and the one writer work side by side.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, cast

import apsw
from PySide6.QtCore import QObject, Signal

from gallery_app.core import paths
from gallery_app.core.errors import StoreError
from gallery_app.core.models import loading
from gallery_app.core.models.specs import Role
from gallery_app.core.store import close_connection, open_store
from gallery_app.core.store.connection import store_failure
from gallery_app.ui.settings import Settings
from gallery_app.ui.workers import Worker, WorkerPool

if TYPE_CHECKING:  # the runtimes are imported where a model is first loaded, on a worker
    from gallery_app.core.chat.second_reading import SecondReading
    from gallery_app.core.models.runtimes.clip import ClipTextEncoder, ClipVisionEncoder
    from gallery_app.core.models.runtimes.embedders import TextEmbedder
    from gallery_app.core.models.runtimes.llama import ChatLLM

_OPENERS: dict[Role, Callable[..., Any]] = {
    Role.TEXT_EMBEDDER: lambda setting, s: loading.open_text_embedder(setting, threads=s.threads),
    Role.CHAT_LLM: lambda setting, s: loading.open_chat_llm(setting, n_ctx=s.llm_context, threads=s.threads),
    Role.CLIP_VISION: lambda setting, s: loading.open_clip_vision(setting, threads=s.threads),
    Role.CLIP_TEXT: lambda setting, s: loading.open_clip_text(setting, threads=s.threads),
}


class Services(QObject):
    #: Emitted (from any thread) after something changed the database: "chats", "photos" or "notes".
    data_changed = Signal(str)
    #: Emitted when models were released, e.g. after the settings or a download changed them.
    models_reset = Signal()
    #: (label, Worker): a long job the window shows in its status bar, with progress, Cancel and errors.
    task_started = Signal(str, object)
    #: A short message for the status bar.
    message = Signal(str)
    #: (StoreError) the database cannot be used (damaged, unwritable, …): the window tells the person once.
    store_failed = Signal(object)

    def __init__(self, settings: Settings | None = None, workers: WorkerPool | None = None,
                 parent: QObject | None = None):
        super().__init__(parent)
        self.settings = settings or Settings()
        self.workers = workers or WorkerPool()
        self._models: dict[Role, Any] = {}
        self._models_lock = threading.Lock()  # held only to read or change _models, never while loading
        self._load_locks = {role: threading.Lock() for role in Role}
        self._reader_lock = threading.Lock()
        self._second_reading: SecondReading | Literal[False] | None = None  # False: tried, not installed
        self._generation = 0
        #: A video file that stands in for the webcam (``gallery-app --camera-file``), for tests and demos.
        self.camera_file: str | None = None

    def run(self, worker: Worker, label: str | None = None) -> Worker:
        """Start ``worker`` on the shared pool; with a label, the status bar shows its progress and errors."""
        self.workers.start(worker)
        if label:
            self.task_started.emit(label, worker)
        return worker

    # --- database ------------------------------------------------------------------------------
    @contextmanager
    def connect(self) -> Iterator[apsw.Connection]:
        """A connection of its own for one piece of work (call it on the thread that uses it).

        A damaged page or a read-only file met while working raises the same ``StoreError`` as at opening.
        """
        try:
            path = paths.database_path()
            conn = open_store(path)
        except StoreError as exc:
            self.store_failed.emit(exc)
            raise
        try:
            yield conn
        except Exception as exc:
            failure = store_failure(exc, path)
            if failure is None:
                raise
            self.store_failed.emit(failure)
            raise failure from exc
        finally:
            close_connection(conn)

    def check_store(self) -> StoreError | None:
        """Open the database once, before the window uses it: what stops that, or None."""
        try:
            with self.connect():
                return None
        except StoreError as exc:
            return exc

    # --- models --------------------------------------------------------------------------------
    def model(self, role: Role) -> TextEmbedder | ChatLLM | ClipVisionEncoder | ClipTextEncoder:
        """The model for ``role``, loaded on first use; raises ``ModelNotAvailable`` with how to get it."""
        with self._models_lock:
            if role in self._models:
                return self._models[role]
        with self._load_locks[role]:  # one load per role at a time; the GUI thread never takes this lock
            with self._models_lock:
                if role in self._models:
                    return self._models[role]
                generation = self._generation
            model = _OPENERS[role](self.settings.model_setting(role), self.settings)
            with self._models_lock:
                if generation == self._generation:  # not forgotten (new settings) while it loaded
                    self._models[role] = model
            for notice in loading.notices(model):  # queued to the GUI thread: the status bar says it
                self.message.emit(notice)
            return model

    # Each role's opener (_OPENERS) makes that role's kind of model: the casts say which.
    def text_embedder(self) -> TextEmbedder:
        return cast("TextEmbedder", self.model(Role.TEXT_EMBEDDER))

    def chat_llm(self) -> ChatLLM:
        return cast("ChatLLM", self.model(Role.CHAT_LLM))

    def clip_vision(self) -> ClipVisionEncoder:
        return cast("ClipVisionEncoder", self.model(Role.CLIP_VISION))

    def clip_text(self) -> ClipTextEncoder:
        return cast("ClipTextEncoder", self.model(Role.CLIP_TEXT))

    def second_reading(self) -> SecondReading | None:
        """The model that reads the best passages again, opened on first use; None when Settings turned it
        off or its model is not installed (search then keeps the first stage's order)."""
        if not self.settings.read_again:
            with self._reader_lock:  # turned off in Settings: its memory is given back
                reader, self._second_reading = self._second_reading, None
            if reader:
                reader.release()
            return None
        with self._reader_lock:
            if self._second_reading is None:
                from gallery_app.core.chat.second_reading import open_second_reading

                self._second_reading = open_second_reading() or False
            return self._second_reading or None

    def loaded(self, role: Role) -> bool:
        return role in self._models

    def switch_text_embedder(self, setting: str) -> Worker:
        """Moves every chat to another text embedder in a writing job (progress and Cancel in the status bar);
        the one used now keeps answering searches until the new one covers every passage."""
        from gallery_app.ui.chat import jobs

        worker = Worker(jobs.switch_embedder, self, setting).writing("the switch to another text embedder")

        def switched(name: str) -> None:
            self.settings.set_model(Role.TEXT_EMBEDDER, setting)
            self.release_models()  # the next search and import load it
            self.message.emit(f"Every chat is now searched with {name}.")

        worker.signals.result.connect(switched)
        worker.signals.cancelled.connect(lambda: self.message.emit(
            "The switch of text embedder was stopped; search keeps the one it had. What was downloaded and "
            "embedded is kept."))
        self.run(worker, "Embedding every chat with the new text embedder")
        return worker

    def release_models(self) -> None:
        """Forget the loaded models, so the next job loads them with the current settings or files.

        A job still running keeps the model it was given until it ends, and the model is freed when
        the last job lets go: closing a native model under a running job crashes the process.
        """
        with self._models_lock:
            self._models.clear()
            self._generation += 1
        self.models_reset.emit()

    def shutdown(self) -> None:
        """Free every model now; only once no job is running (the window waits for them first)."""
        with self._models_lock:
            models, self._models = list(self._models.values()), {}
            self._generation += 1
        with self._reader_lock:
            reader, self._second_reading = self._second_reading, None
        for model in [*models, reader]:
            if model and hasattr(model, "release"):
                model.release()
