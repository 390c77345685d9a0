"""The chat model in a child process, so that a native crash in llama.cpp ends the child, never the app.

``LlamaProcess`` starts a child (spawned: a fork of a process with Qt's threads is not safe) that loads
the GGUF with ``open_llama`` and answers over a pipe: tokenize, detokenize, and completions streamed
back piece by piece. When the child dies — a segfault, an abort, the kernel's out-of-memory killer —
the next read of the pipe raises ``LanguageModelCrashed`` with one sentence saying so; the caller (the
window's ask job, the CLI) shows it like any other error, and the next question starts a fresh child.
"""

from __future__ import annotations

import multiprocessing
import signal
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from gallery_app.core.errors import AppError, ModelError

#: How long a child that was asked to stop gets before it is killed.
_STOP_SECONDS = 5.0


class LanguageModelCrashed(ModelError):
    """The child process running the language model died; nothing of the person's data was touched."""


def describe_exit(exitcode: int | None) -> str:
    """"signal 11, SIGSEGV" or "exit code 1": how the child ended, for the one sentence a person reads."""
    if exitcode is None:
        return "no exit status"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            return f"signal {-exitcode}"
        return f"signal {-exitcode}, {name}" + (": killed, perhaps for lack of memory"
                                                 if -exitcode == signal.SIGKILL else "")
    return f"exit code {exitcode}"


def crash_error(exitcode: int | None, model_name: str) -> LanguageModelCrashed:
    return LanguageModelCrashed(
        f"The language model stopped unexpectedly ({describe_exit(exitcode)}). Your chats are safe.",
        hint=f"Ask again to restart {model_name}; if it keeps stopping, run: gallery-app-cli doctor --self-test")


# --- the child ----------------------------------------------------------------------------------------
def _serve(conn, path: str, n_ctx: int, threads: int | None, seed: int) -> None:
    """The child's whole life: load, say ready, answer requests until told to close or the parent goes."""
    # Ctrl+C in a terminal reaches the whole process group: the parent decides what stops, and tells it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from gallery_app.core.models.runtimes.llama import open_llama
    from gallery_app.core.models.runtimes.llama_backend import backend_state

    try:
        llama = open_llama(Path(path), n_ctx=n_ctx, threads=threads, seed=seed)
        state = backend_state()
        conn.send(("ready", {"metadata": dict(llama.metadata), "bos": llama.token_bos(), "eos": llama.token_eos(),
                             "n_vocab": llama.n_vocab(), "n_ctx": llama.n_ctx(), "system_info": state.system_info,
                             "guard_active": state.guard_active}))
    except AppError as error:
        conn.send(("error", error.message, error.hint))
        return
    except Exception as exc:  # anything else llama.cpp raises while loading: the parent reports it
        conn.send(("error", f"The language model could not be loaded ({type(exc).__name__}: {exc}).", None))
        return
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):  # the parent is gone
            break
        kind = request[0]
        if kind == "close":
            break
        try:
            if kind == "tokenize":
                conn.send(("ok", llama.tokenize(request[1], add_bos=request[2], special=request[3])))
            elif kind == "detokenize":
                conn.send(("ok", llama.detokenize(request[1], special=request[2])))
            elif kind == "complete":
                _stream(conn, llama, request[1])
            elif kind == "likelihoods":
                conn.send(("ok", mean_log_likelihoods(llama, request[1], request[2])))
            # A "cancel" arriving after its answer had ended needs nothing.
        except (EOFError, OSError):
            break
        except Exception as exc:
            conn.send(("error", f"The language model failed ({type(exc).__name__}: {exc}).", None))
    llama.close()


def mean_log_likelihoods(llama, prompts: Sequence[Sequence[int]],
                         continuations: Sequence[Sequence[int]]) -> list[list[float]]:
    """Per prompt, per continuation, the mean log-probability of the continuation's tokens read right after it.

    The prompt is read once without logits (they are not needed); then, for each continuation, the prompt's
    last token and the continuation with logits, as ``Llama.eval`` does with ``logits_all`` but without keeping
    a row of the whole vocabulary for every token of the prompt. A second continuation costs its own tokens
    only, not the prompt's again."""
    import numpy as np

    if not continuations or not all(continuations) or not all(prompts):
        raise ValueError("A likelihood needs a prompt (at least its first token) and a continuation.")
    n_vocab = llama.n_vocab()
    wanted = [np.asarray(continuation) for continuation in continuations]
    means = []
    for prompt in prompts:
        llama.reset()
        if len(prompt) > 1:
            llama.eval(list(prompt[:-1]))
        per_continuation = []
        for continuation, wanted_tokens in zip(continuations, wanted):
            # Row i of the logits is what the model expects after tail[i], i.e. continuation[i].
            tail = [prompt[-1], *continuation[:-1]]
            # What an earlier prompt or continuation left beyond this prompt is dropped first.
            llama._ctx.kv_cache_seq_rm(-1, llama.n_tokens, -1)
            llama._batch.set_batch(batch=tail, n_past=llama.n_tokens, logits_all=True)
            llama._ctx.decode(llama._batch)
            rows = np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(len(tail) * n_vocab,)).reshape(len(tail), n_vocab)
            top = rows.max(axis=1, keepdims=True)
            log_norm = np.log(np.exp(rows - top).sum(axis=1)) + top[:, 0]
            per_continuation.append(float(np.mean(rows[np.arange(len(tail)), wanted_tokens] - log_norm)))
        means.append(per_continuation)
    llama.reset()
    return means


def _stream(conn, llama, kwargs: dict[str, Any]) -> None:
    stream = llama.create_completion(stream=True, **kwargs)
    try:
        for chunk in stream:
            if conn.poll() and conn.recv()[0] == "cancel":
                break
            piece = chunk["choices"][0].get("text")
            if piece:
                conn.send(("piece", piece))
    finally:
        stream.close()
    conn.send(("end",))


# --- the parent's handle --------------------------------------------------------------------------------
class LlamaProcess:
    """A loaded GGUF in a child process, with the part of ``llama_cpp.Llama`` the app uses.

    One request at a time (a lock): a completion holds it until its last piece has been read."""

    def __init__(self, path: Path, *, n_ctx: int, threads: int | None = None, seed: int = 0,
                 name: str = "the language model"):
        self.name = name
        context = multiprocessing.get_context("spawn")
        self._conn, child_end = context.Pipe()
        self._process = context.Process(target=_serve, args=(child_end, str(path), n_ctx, threads, seed),
                                        name="gallery-app-llm", daemon=True)
        self._process.start()
        child_end.close()  # the child's end lives in the child only, so its death is an EOF here
        self._lock = threading.RLock()
        reply = self._receive()
        if reply[0] == "error":
            self._process.join(_STOP_SECONDS)
            raise ModelError(reply[1], hint=reply[2])
        info = reply[1]
        self.metadata: dict[str, str] = info["metadata"]
        self._bos, self._eos, self._n_vocab, self._n_ctx = info["bos"], info["eos"], info["n_vocab"], info["n_ctx"]
        self.system_info: str = info["system_info"]
        self.guard_active: bool = info["guard_active"]

    @property
    def pid(self) -> int | None:
        return self._process.pid

    @property
    def dead(self) -> bool:
        return not self._process.is_alive()

    # --- what Llama offers ---
    def token_bos(self) -> int:
        return self._bos

    def token_eos(self) -> int:
        return self._eos

    def n_vocab(self) -> int:
        return self._n_vocab

    def n_ctx(self) -> int:
        return self._n_ctx

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return self._call(("tokenize", text, add_bos, special))

    def detokenize(self, tokens: Sequence[int], special: bool = False) -> bytes:
        return self._call(("detokenize", list(tokens), special))

    def log_likelihoods(self, prompts: Sequence[Sequence[int]],
                        continuations: Sequence[Sequence[int]]) -> list[list[float]]:
        """Per prompt, per continuation, how likely it is right after the prompt (mean log-probability of its
        tokens)."""
        return self._call(("likelihoods", [list(p) for p in prompts], [list(c) for c in continuations]))

    def complete(self, prompt_tokens: Sequence[int], **kwargs) -> Iterator[str]:
        """The completion's text pieces as the child writes them; closing the iterator early stops the child's."""
        with self._lock:
            self._send(("complete", {"prompt": list(prompt_tokens), **kwargs}))
            ended = False
            try:
                while True:
                    reply = self._receive()
                    if reply[0] == "end":
                        ended = True
                        return
                    if reply[0] == "error":
                        ended = True
                        raise ModelError(reply[1], hint=reply[2])
                    yield reply[1]
            finally:
                if not ended and not self.dead:
                    self._stop_stream()

    def _stop_stream(self) -> None:
        """Stopped early (cancelled, or the reader went away): the child is told, and its rest is read off."""
        try:
            self._send(("cancel",))
            while self._receive()[0] not in ("end", "error"):
                pass
        except LanguageModelCrashed:
            pass  # it died meanwhile: the next request starts a fresh one

    def close(self) -> None:
        if self._process.is_alive():
            try:
                self._conn.send(("close",))
            except OSError:
                pass
            self._process.join(_STOP_SECONDS)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(_STOP_SECONDS)
        self._conn.close()

    # --- the pipe ---
    def _call(self, request: tuple):
        with self._lock:
            self._send(request)
            reply = self._receive()
        if reply[0] == "error":
            raise ModelError(reply[1], hint=reply[2])
        return reply[1]

    def _send(self, request: tuple) -> None:
        try:
            self._conn.send(request)
        except OSError:
            raise self._crashed() from None

    def _receive(self) -> tuple:
        try:
            return self._conn.recv()
        except (EOFError, OSError):
            raise self._crashed() from None

    def _crashed(self) -> LanguageModelCrashed:
        self._process.join(_STOP_SECONDS)
        return crash_error(self._process.exitcode, self.name)
