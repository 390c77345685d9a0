"""llama.cpp (llama-cpp-python) for the chat model: loaded on first use, streamed, released on demand."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypedDict

from gallery_app.core.errors import Cancelled, ModelError
from gallery_app.core.models.memory import CONTEXT_TOKENS, fit_context
from gallery_app.core.models.runtimes.lazy import Lazy
from gallery_app.core.models.runtimes.llama_backend import llama_cpp_module
from gallery_app.core.models.runtimes.llama_process import LlamaProcess
from gallery_app.core.models.sources import ResolvedModel
from gallery_app.core.models.specs import LlmShape, Role


class ChatMessage(TypedDict):
    role: str  # "system" | "user" | "assistant"
    content: str


class ChatText(str):
    """A prompt rendered by a chat template that knows which of its pieces are the template's own.

    Only the template's pieces may become special tokens: a chat message that contains
    ``<|im_end|><|im_start|>system`` is read by the model as those characters, never as a new turn.
    """

    pieces: tuple[tuple[str, bool], ...]  # (text, is the template's own)

    def __new__(cls, pieces: Sequence[tuple[str, bool]]):
        text = super().__new__(cls, "".join(piece for piece, _ in pieces))
        text.pieces = tuple((piece, own) for piece, own in pieces if piece)
        return text

    def __getnewargs__(self):  # copy and pickle rebuild it from its pieces, not its characters
        return (self.pieces,)


def _slot(index: int) -> str:
    # Private-use characters: no template writes them, so each marks exactly where a message's text goes.
    return f"\ue000{index}\ue001"


_SLOT = re.compile("\ue000(\\d+)\ue001")


class ChatFormat:
    """A GGUF chat template that renders messages into a ``ChatText`` (template pieces kept apart)."""

    def __init__(self, template: str, *, bos: str, eos: str, name: str = "the model"):
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self._formatter = Jinja2ChatFormatter(template, eos_token=eos, bos_token=bos)
        self.eos = eos
        self.name = name

    def render(self, messages: Sequence[ChatMessage]) -> tuple[ChatText, list[str]]:
        """The prompt for ``messages`` and the template's stop strings.

        The template is rendered with a placeholder for each message's text, which is then put in
        its place, so whatever a message says it cannot change the template's markers. Messages are
        stripped first, as templates that ``trim`` would do, so the text is what the template makes.
        """
        contents = [message["content"].strip() for message in messages]
        formatted = self._formatter(messages=[{**message, "content": _slot(i)} for i, message in enumerate(messages)])
        parts = _SLOT.split(formatted.prompt)
        slots = [int(index) for index in parts[1::2]]
        if sorted(slots) != list(range(len(messages))):
            raise ModelError(f"The chat template of {self.name} changes the messages it is given, so the app "
                             "cannot keep chat text apart from the template's markers.",
                             hint="Choose another answer model in Settings (or --llm).")
        pieces: list[tuple[str, bool]] = []
        for i, part in enumerate(parts):
            pieces.append((part, True) if i % 2 == 0 else (contents[int(part)], False))
        stops = [s for s in ([formatted.stop] if isinstance(formatted.stop, str) else formatted.stop or []) if s]
        return ChatText(pieces), stops or [self.eos]


def default_threads() -> int:
    return max(1, min(8, os.cpu_count() or 1))


def open_llama(path: Path, *, n_ctx: int, threads: int | None = None, **kwargs):
    """A ``llama_cpp.Llama`` in this process with the app's defaults, or a ModelError a person can act on.

    The chat model is not opened here but in a child process (``ChatLLM``), which calls this."""
    Llama = llama_cpp_module().Llama
    threads = threads or default_threads()
    try:
        return Llama(model_path=str(path), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                     verbose=False, **kwargs)
    except (ValueError, RuntimeError, OSError) as exc:
        raise ModelError(
            f"The model file {Path(path).name} could not be loaded by llama.cpp ({exc}).",
            hint="The file may be damaged or not a GGUF model; run: gallery-app-cli models verify",
        ) from exc


def gguf_shape(path: Path) -> LlmShape | None:
    """Layers, KV heads, head size and vocabulary of a GGUF file, read from its header and vocabulary only."""
    try:
        llama = llama_cpp_module().Llama(model_path=str(path), vocab_only=True, verbose=False)
    except Exception:  # not readable as a GGUF: loading it reports that properly
        return None
    try:
        meta = llama.metadata
        arch = meta.get("general.architecture", "")
        heads = int(meta[f"{arch}.attention.head_count"])
        head_dim = int(meta.get(f"{arch}.attention.key_length") or int(meta[f"{arch}.embedding_length"]) // heads)
        return LlmShape(layers=int(meta[f"{arch}.block_count"]),
                        kv_heads=int(meta.get(f"{arch}.attention.head_count_kv") or heads),
                        head_dim=head_dim, vocab=int(llama.n_vocab()))
    except (KeyError, ValueError, ZeroDivisionError):
        return None
    finally:
        llama.close()


def fitting_context(resolved: ResolvedModel, n_ctx: int) -> int:
    """``n_ctx``, or the smaller context that fits in free memory; ``ModelTooBig`` when none does."""
    spec = resolved.spec
    wanted = min(n_ctx, spec.max_tokens)
    path = resolved.path
    size = path.stat().st_size if path.is_file() else spec.size
    shape = spec.shape or (gguf_shape(path) if path.is_file() else None)
    if size is None or shape is None:
        return wanted  # nothing to estimate from; llama.cpp's own error, if any, is reported as usual
    return fit_context(spec, size, shape, wanted)


class ChatLLM:
    """A chat model that streams its answer as text pieces, stoppable between tokens.

    The weights live in a child process (``LlamaProcess``): if llama.cpp crashes there, the question
    fails with ``LanguageModelCrashed`` and the next one starts a fresh child.

    Its context is lowered when the free memory cannot hold the asked one (``n_ctx`` then says what
    it got, ``context_notice`` why); a model that does not fit at all raises ``ModelTooBig`` here,
    before llama.cpp reads the weights.
    """

    def __init__(self, resolved: ResolvedModel, *, n_ctx: int = CONTEXT_TOKENS, threads: int | None = None, seed: int = 0):
        if resolved.spec.role is not Role.CHAT_LLM:
            raise ModelError(f"{resolved.spec.name} is not a chat model.")
        self.resolved = resolved
        self.spec = resolved.spec
        self.n_ctx = fitting_context(resolved, n_ctx)
        asked = min(n_ctx, self.spec.max_tokens)
        self.context_notice = (None if self.n_ctx == asked else
                               f"Memory is short, so {self.spec.name} reads {self.n_ctx:,} tokens of context "
                               f"instead of {asked:,}: answers draw on fewer messages.")
        self._seed = seed
        self._llama = Lazy(lambda: LlamaProcess(resolved.path, n_ctx=self.n_ctx, threads=threads, seed=seed,
                                                name=self.spec.name),
                           close=lambda process: process.close())

    @property
    def model_key(self) -> str:
        return self.spec.key

    def _model(self) -> LlamaProcess:
        process = self._llama.get()
        if process.dead:  # it crashed on an earlier question (which said so): this one gets a fresh child
            self._llama.release()
            process = self._llama.get()
        return process

    @property
    def loaded(self) -> bool:
        process = self._llama.current
        return process is not None and not process.dead

    @property
    def process_id(self) -> int | None:
        """The child's pid while the model is loaded (the tests that kill it)."""
        process = self._llama.current
        return process.pid if process is not None and not process.dead else None

    def tokenize(self, text: str) -> list[int]:
        """Tokens of a whole prompt, as the model reads it.

        Only a ``ChatText``'s template pieces are read as special tokens; any other text (chat
        messages, a completion prompt) is plain text, whatever markers it contains.
        """
        llama = self._model()
        if not isinstance(text, ChatText):
            return llama.tokenize(text.encode("utf-8"), add_bos=True, special=False)
        # A chat template writes the BOS marker itself where its model wants one (as llama.cpp assumes).
        tokens: list[int] = []
        for piece, own in text.pieces:
            tokens += llama.tokenize(piece.encode("utf-8"), add_bos=False, special=own)
        return tokens

    def count_tokens(self, text: str) -> int:
        return len(self._model().tokenize(text.encode("utf-8"), add_bos=False, special=False))

    @property
    def chat_template(self) -> str | None:
        """The GGUF's chat template; None for base models, which get a plain completion prompt."""
        if self.spec.prompt_style != "chat":
            return None
        return self._model().metadata.get("tokenizer.chat_template") or None

    def _special_text(self, token: int) -> str:
        return self._model().detokenize([token], special=True).decode("utf-8", errors="ignore")

    def _format(self) -> ChatFormat:
        """The chat template compiled once per loaded model (Jinja compiles on construction)."""
        llama = self._model()
        if getattr(self, "_format_for", None) is not llama:
            template = self.chat_template
            if template is None:
                raise ModelError(f"{self.spec.name} has no chat template; use a completion prompt.")
            self._cached_format = ChatFormat(template, bos=self._special_text(llama.token_bos()),
                                             eos=self._special_text(llama.token_eos()), name=self.spec.name)
            self._format_for = llama
        return self._cached_format

    def render_chat(self, messages: Sequence[ChatMessage]) -> tuple[ChatText, list[str]]:
        """The exact prompt the chat template makes of ``messages``, and the template's stop strings."""
        # Not llama.cpp's create_chat_completion: it reads the messages' text as special tokens too.
        return self._format().render(messages)

    def stream_completion(self, prompt_tokens: list[int], *, max_tokens: int, stop: Sequence[str] = (),
                          temperature: float = 0.0, repeat_penalty: float = 1.1,
                          cancel: Callable[[], bool] | None = None) -> Iterator[str]:
        """Continue an already tokenised prompt, piece by piece; stops between tokens when ``cancel()``."""
        stream = self._model().complete(
            prompt_tokens, max_tokens=max_tokens, temperature=temperature, stop=list(stop),
            # A mild repeat penalty stops the small models from looping on one sentence until max_tokens.
            seed=self._seed, top_k=1 if temperature == 0 else 40, repeat_penalty=repeat_penalty,
        )
        try:
            for piece in stream:
                if cancel is not None and cancel():
                    raise Cancelled("The answer was stopped.")
                yield piece
        finally:
            stream.close()

    def continuation_likelihoods(self, prompts: Sequence[str], continuations: Sequence[str]) -> list[list[float]]:
        """Per prompt (plain text, BOS first), per continuation, the mean log-probability of the continuation
        right after the prompt (each prompt is read once, whatever the number of continuations)."""
        llama = self._model()
        tokens = [llama.tokenize(prompt.encode("utf-8"), add_bos=True, special=False) for prompt in prompts]
        following = [llama.tokenize(text.encode("utf-8"), add_bos=False, special=False) for text in continuations]
        return llama.log_likelihoods(tokens, following)

    def release(self) -> None:
        self._llama.release()
