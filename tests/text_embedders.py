"""A small deterministic text embedder for fast chat tests, built on the app's own ``TextEmbedder``.

``WordHashEmbedder`` is a real ``TextEmbedder`` subclass (its spec, ``model_key``, ``dims``,
``max_tokens``, ``embed_query``/``embed_passages`` and the shape check and L2 normalisation are the
app's code); only the two backend methods are stand-ins, and both are simple known functions:

* tokens are lower-cased words (``\\w+``) and single punctuation marks, plus two special tokens
  (like BERT's [CLS] and [SEP]) and the spec's prefix: ``count_tokens("Hi, Maya!") == 4 + 2``;
* a vector is a hashed bag of the words among the first ``max_tokens`` tokens (later ones are cut
  off, as a real model truncates): each word adds 1 in its slot (a few very common English words
  0.1) and its character trigrams, in slots of their own, half as much. Every entry is >= 0, so the
  cosine of two texts is >= 0, as with real sentence embedders, and grows with the words (and, less,
  the parts of words) they share: a question sharing rare words with one message finds that
  message, and a test can say which passage must come first.

2048 dimensions, not the 64-256 a toy would have: a chat of a few dozen lines already has some 200
different words, and in fewer slots they collide so often that chance, not shared words, ranks the
passages. The hash is blake2b, not Python's ``hash`` (salted per process), so vectors are the same in
every run. The embedder records what it was asked to embed, so a test can tell which passages an
import embedded, and in how many batches.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from gallery_app.core.models.runtimes.embedders import TextEmbedder
from gallery_app.core.models.sources import ResolvedModel, Source
from gallery_app.core.models.specs import ModelSpec, Role, Runtime

DIMS = 2048
MAX_TOKENS = 64
#: Special tokens every text is given (as [CLS] ... [SEP]); ``count_tokens("")`` is this.
SPECIAL_TOKENS = 2
WORD_WEIGHT = 1.0
#: A word's trigrams together weigh this much beside the word's 1 (the norm of their part of the vector),
#: so "kayaks" is near "kayak" and "bringing" near "bring".
TRIGRAMS_WEIGHT = 0.5
COMMON_WEIGHT = 0.1
#: Never all zeros (a text of only punctuation, or nothing): a tiny constant in the first dimension.
BIAS = 1e-3
COMMON_WORDS = frozenset(
    "a an and are at be but by did do does for from had has have he her his how i in is it its me my "
    "of on or our she so that the their them they this to up us was we were what when where which who "
    "why will with you your".split())
_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def tokens(text: str) -> list[str]:
    """The fake's tokens of ``text``: lower-cased words and single punctuation marks (no special tokens)."""
    return _TOKEN.findall(text.lower())


@functools.lru_cache(maxsize=65536)
def _slot(feature: str, dims: int) -> int:
    return int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little") % dims


def spec_for(key: str = "test-word-hash", *, dims: int = DIMS, max_tokens: int = MAX_TOKENS,
             query_prefix: str = "", passage_prefix: str = "", name: str | None = None) -> ModelSpec:
    return ModelSpec(key=key, role=Role.TEXT_EMBEDDER, name=name or f"{key} (test)", runtime=Runtime.ONNX,
                     files=(), licence="test only", dims=dims, pooling="none", query_prefix=query_prefix,
                     passage_prefix=passage_prefix, max_tokens=max_tokens, languages="English")


class WordHashEmbedder(TextEmbedder):
    """Hashed bags of words (and character trigrams), L2-normalised; see the module's docstring."""

    def __init__(self, key: str = "test-word-hash", *, dims: int = DIMS, max_tokens: int = MAX_TOKENS,
                 query_prefix: str = "", passage_prefix: str = ""):
        spec = spec_for(key, dims=dims, max_tokens=max_tokens, query_prefix=query_prefix,
                        passage_prefix=passage_prefix)
        super().__init__(ResolvedModel(spec, Source.MODELS_FOLDER, {}))
        #: Every passage text embedded, in order, and the size of each ``embed_passages`` batch.
        self.passages: list[str] = []
        self.batches: list[int] = []
        self.queries: list[str] = []
        #: The most tokens any embedded passage took (more than ``max_tokens`` would have been truncated).
        self.longest_passage = 0

    # --- the backend ------------------------------------------------------------------------------
    def count_tokens(self, text: str) -> int:
        return len(tokens(self.spec.passage_prefix + text)) + SPECIAL_TOKENS

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dims, np.float64)
        vector[0] += BIAS
        words = self.dims * 3 // 4  # words and trigrams get dimensions of their own: they never collide
        seen = tokens(text)[:max(0, self.max_tokens - SPECIAL_TOKENS)]  # truncated as a real model would
        for token in seen:
            if not (token[0].isalnum() or token[0] == "_"):
                continue  # punctuation costs a token but carries no meaning
            weight = COMMON_WEIGHT if token in COMMON_WORDS else WORD_WEIGHT
            vector[_slot("w:" + token, words)] += weight
            padded = f"<{token}>"
            grams = [padded[i:i + 3] for i in range(len(padded) - 2)]
            for gram in grams:
                vector[words + _slot("g:" + gram, self.dims - words)] += weight * TRIGRAMS_WEIGHT / len(grams) ** 0.5
        return vector

    def _embed_batch(self, texts: list[str], is_query: bool) -> np.ndarray:
        return np.stack([self._vector(text) for text in self._prefixed(texts, is_query)]).astype(np.float32)

    # --- what a test can look at ------------------------------------------------------------------
    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        self.batches.append(len(texts))
        self.passages.extend(texts)
        if texts:
            self.longest_passage = max(self.longest_passage, *(self.count_tokens(t) for t in texts))
        return super().embed_passages(texts)

    def embed_query(self, text: str) -> np.ndarray:
        self.queries.append(text)
        return super().embed_query(text)

    def forget(self) -> None:
        """Clears the record of what was embedded (the vectors do not change)."""
        self.passages.clear()
        self.batches.clear()
        self.queries.clear()
        self.longest_passage = 0


def write_chat(folder: Path, lines: Sequence[str], name: str = "_chat.txt") -> Path:
    """An export file of ``lines`` (CRLF, as WhatsApp writes them) in ``folder``, made if needed."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode("utf-8"))
    return path
