"""What asking needs of a language model: llama.cpp's ``ChatLLM`` is one, the tests' scripted stand-ins are others."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, runtime_checkable

from gallery_app.core.models.runtimes.llama import ChatMessage


@runtime_checkable
class ChatModel(Protocol):
    #: The context window in tokens, prompt and answer together: what the model got, which may be less
    #: than was asked for when memory is short.
    n_ctx: int

    @property
    def chat_template(self) -> str | None:
        """None for a base model, which is given a plain completion prompt instead."""

    @property
    def loaded(self) -> bool:
        """Whether the weights were read: the first call that needs them takes seconds."""

    def tokenize(self, text: str) -> list[int]:
        """A whole prompt's tokens, as the model reads it."""

    def count_tokens(self, text: str) -> int: ...

    def render_chat(self, messages: Sequence[ChatMessage]) -> tuple[str, list[str]]:
        """The prompt the chat template makes of ``messages``, and the template's stop strings."""

    def stream_completion(self, prompt_tokens: list[int], /, *, max_tokens: int, stop: Sequence[str] = (),
                          cancel: Callable[[], bool] | None = None) -> Iterator[str]:
        """The answer piece by piece; raises ``Cancelled`` between tokens once ``cancel()`` is true."""
