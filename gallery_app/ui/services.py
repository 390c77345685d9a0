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
from typing import Any

import apsw
from PySide6.QtCore import QObject, Signal

from gallery_app.core.models import loading
from gallery_app.core.models.specs import Role
from gallery_app.core.store import open_store
from gallery_app.ui.settings import Settings
from gallery_app.ui.workers import Worker, WorkerPool

_OPENERS: dict[Role, Callable[..., Any]] = {
    Role.TEXT_EMBEDDER: lambda setting, s: loading.open_text_embedder(setting, threads=s.threads),
    Role.CHAT_LLM: lambda setting, s: loading.open_chat_llm(setting, n_ctx=s.llm_context, threads=s.threads),
    Role.CLIP_VISION: lambda setting, s: loading.open_clip_vision(setting, threads=s.threads),
    Role.CLIP_TEXT: lambda setting, s: loading.open_clip_text(setting, threads=s.threads),
}


class Services(QObject):
    #: Emitted (from any thread) after something changed the database: "chats" or "photos".
    data_changed = Signal(str)
    #: Emitted when models were released, e.g. after the settings or a download changed them.
    models_reset = Signal()
    #: (label, Worker): a long job the window shows in its status bar, with progress, Cancel and errors.
    task_started = Signal(str, object)
    #: A short message for the status bar.
    message = Signal(str)

    def __init__(self, settings: Settings | None = None, workers: WorkerPool | None = None,
                 parent: QObject | None = None):
        super().__init__(parent)
        self.settings = settings or Settings()
        self.workers = workers or WorkerPool()
        self._models: dict[Role, Any] = {}
        self._locks = {role: threading.Lock() for role in Role}
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
        """A connection of its own for one piece of work (call it on the thread that uses it)."""
        conn = open_store()
        try:
            yield conn
        finally:
            conn.close()

    # --- models --------------------------------------------------------------------------------
    def model(self, role: Role):
        """The model for ``role``, loaded on first use; raises ``ModelNotAvailable`` with how to get it."""
        with self._locks[role]:
            if role not in self._models:
                self._models[role] = _OPENERS[role](self.settings.model_setting(role), self.settings)
            return self._models[role]

    def text_embedder(self):
        return self.model(Role.TEXT_EMBEDDER)

    def chat_llm(self):
        return self.model(Role.CHAT_LLM)

    def clip_vision(self):
        return self.model(Role.CLIP_VISION)

    def clip_text(self):
        return self.model(Role.CLIP_TEXT)

    def loaded(self, role: Role) -> bool:
        return role in self._models

    def release_models(self) -> None:
        """Drop every loaded model (settings changed, a model was downloaded, the window closes)."""
        for role in Role:
            with self._locks[role]:
                model = self._models.pop(role, None)
            if model is not None and hasattr(model, "release"):
                model.release()
        self.models_reset.emit()
