"""Finding the note chunks that answer a question: every embedded chunk of the folders asked is scored.

Scores are z-scores over the chunks searched, as chat retrieval scores its windows
(``chat/retrieval.py``): what a cosine of 0.82 means differs per embedder and per question, and a
chunk that stands out from the question's own spread over the notes is comparable with a chat window
that stands out from its spread over the chats. The cosine is kept beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import apsw
import numpy as np

from gallery_app.core.errors import AppError
from gallery_app.core.models.runtimes.embedders import TextEmbedder
from gallery_app.core.notes.repository import StoredNoteChunk, chunk_similarities, chunks_by_id, chunks_matching
from gallery_app.core.rare_words import rare_word_lifts
from gallery_app.core.z_scores import z_scores

DEFAULT_HITS = 5
MAX_HITS = 1000


@dataclass(frozen=True)
class NoteHit:
    chunk: StoredNoteChunk
    #: Standard deviations above the question's mean similarity over the chunks searched.
    score: float
    similarity: float

    @property
    def path(self) -> Path:
        return self.chunk.path

    @property
    def title(self) -> str:
        return self.chunk.title

    @property
    def heading_path(self) -> tuple[str, ...]:
        return self.chunk.heading_path

    @property
    def page(self) -> int | None:
        return self.chunk.page

    @property
    def text(self) -> str:
        return self.chunk.text


def search_notes(conn: apsw.Connection, embedder: TextEmbedder, question: str, k: int = DEFAULT_HITS,
                 folder_ids: Sequence[int] | None = None) -> list[NoteHit]:
    """The ``k`` chunks (of ``folder_ids``, or every notes folder) best matching ``question``, best first,
    ranked as asking the notes in the window ranks them (its rare words lift the chunks holding them)."""
    if not question.strip():
        raise AppError("The question is empty.", hint="Type what you are looking for in your notes.")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_HITS:
        raise AppError(f"The number of results must be a whole number from 1 to {MAX_HITS}, not {k!r}.")
    return ranked_chunks(conn, embedder, embedder.embed_query(question), k, folder_ids, rare_words_of=question)


def ranked_chunks(conn: apsw.Connection, embedder: TextEmbedder, query: np.ndarray, k: int,
                  folder_ids: Sequence[int] | None = None, *, min_score: float | None = None,
                  scale: tuple[float, float] | None = None, rare_words_of: str | None = None) -> list[NoteHit]:
    """The ``k`` chunks best matching the embedded ``query``, best first, none below ``min_score`` similarity
    (None: every chunk).

    ``scale``: the mean and spread to take the z-scores on (another source's, so both rank on one scale);
    None: the chunks' own. ``rare_words_of``: the question whose rare words lift the chunks holding them, as
    chat passages are lifted (``core/rare_words.py``)."""
    found = chunk_similarities(conn, embedder, query, folder_ids)
    if found is None:
        return []
    scores = found.scores.astype(np.float64)
    z = (scores - scale[0]) / scale[1] if scale is not None else z_scores(scores)
    if rare_words_of:
        z = z + rare_word_lifts(rare_words_of, found.chunk_ids,
                                lambda fts_query, limit: chunks_matching(conn, fts_query, folder_ids, limit))
    eligible = np.arange(len(scores)) if min_score is None else np.flatnonzero(found.scores >= min_score)
    best = eligible[np.argsort(-z[eligible], kind="stable")][:k]
    chunks = chunks_by_id(conn, found.chunk_ids[best].tolist())
    return [NoteHit(chunks[int(found.chunk_ids[i])], float(z[i]), float(found.scores[i]))
            for i in best if int(found.chunk_ids[i]) in chunks]
