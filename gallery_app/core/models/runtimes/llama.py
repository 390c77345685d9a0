"""llama.cpp (llama-cpp-python) for the chat model: loaded on first use, streamed, released on demand."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypedDict

from gallery_app.core.errors import Cancelled, ModelError
from gallery_app.core.models.runtimes.lazy import Lazy
from gallery_app.core.models.sources import ResolvedModel
from gallery_app.core.models.specs import Role


class ChatMessage(TypedDict):
    role: str  # "system" | "user" | "assistant"
    content: str


def default_threads() -> int:
    return max(1, min(8, os.cpu_count() or 1))


def open_llama(path: Path, *, n_ctx: int, threads: int | None = None, **kwargs):
    """A ``llama_cpp.Llama`` with the app's defaults, or a ModelError a person can act on."""
    try:
        from llama_cpp import Llama
    except ImportError as exc:
        raise ModelError("The llama.cpp runtime (llama-cpp-python) is not installed.",
                         hint="Reinstall the app with its dependencies.") from exc
    threads = threads or default_threads()
    try:
        return Llama(model_path=str(path), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                     verbose=False, **kwargs)
    except (ValueError, RuntimeError, OSError) as exc:
        raise ModelError(
            f"The model file {Path(path).name} could not be loaded by llama.cpp ({exc}).",
            hint="The file may be damaged or not a GGUF model; run: gallery-app-cli models verify",
        ) from exc


class ChatLLM:
    """A chat model that streams its answer as text pieces, stoppable between tokens."""

    def __init__(self, resolved: ResolvedModel, *, n_ctx: int = 4096, threads: int | None = None, seed: int = 0):
        if resolved.spec.role is not Role.CHAT_LLM:
            raise ModelError(f"{resolved.spec.name} is not a chat model.")
        self.resolved = resolved
        self.spec = resolved.spec
        self.n_ctx = min(n_ctx, self.spec.max_tokens)
        self._seed = seed
        self._llama = Lazy(lambda: open_llama(resolved.path, n_ctx=self.n_ctx, threads=threads, seed=seed),
                           close=lambda llama: llama.close())

    @property
    def model_key(self) -> str:
        return self.spec.key

    def _model(self):
        return self._llama.get()

    @property
    def loaded(self) -> bool:
        return self._llama.loaded

    def count_tokens(self, text: str) -> int:
        return len(self._model().tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def stream_chat(self, messages: Sequence[ChatMessage], *, max_tokens: int = 256, temperature: float = 0.2,
                    stop: Sequence[str] = (), cancel: Callable[[], bool] | None = None) -> Iterator[str]:
        """Yield the answer piece by piece; stop early (raising Cancelled) when ``cancel()`` turns true."""
        stream = self._model().create_chat_completion(
            messages=list(messages), max_tokens=max_tokens, temperature=temperature, stop=list(stop),
            stream=True, seed=self._seed,
        )
        try:
            for chunk in stream:
                if cancel is not None and cancel():
                    raise Cancelled("The answer was stopped.")
                piece = chunk["choices"][0].get("delta", {}).get("content")
                if piece:
                    yield piece
        finally:
            stream.close()

    def chat(self, messages: Sequence[ChatMessage], **kwargs) -> str:
        return "".join(self.stream_chat(messages, **kwargs))

    def release(self) -> None:
        self._llama.release()
