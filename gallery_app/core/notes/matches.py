"""Note passages as the chat side's ``Match``es, so that one question searches chats and notes together.

A note chunk found for a question becomes a ``Match`` whose ``note`` says where it is (file, headings,
page) and which of its lines answer best: the lines of the best few chunks are compared with the
question one by one in the embedder's space, as the chat side picks a passage's answering message
(``ChatRetriever._answer_messages``), so a card highlights the line that answers, not the whole chunk.
"""

from __future__ import annotations

from collections.abc import Sequence

import apsw
import numpy as np

from gallery_app.core.chat.retrieval import ANSWER_MESSAGE_PASSAGES, Match, NoteSource
from gallery_app.core.models.runtimes.embedders import TextEmbedder
from gallery_app.core.notes.repository import StoredNoteChunk, list_folders
from gallery_app.core.notes.search import ranked_chunks

#: Lines of a chunk compared with the question (a chunk is at most 256 tokens: a section, or a few short ones).
MAX_LINES_COMPARED = 40
#: Shorter lines ("---", "- ", a lone number) say nothing on their own and are never the highlight.
MIN_LINE_CHARS = 12


def has_notes(conn: apsw.Connection) -> bool:
    return bool(list_folders(conn))


def note_matches(conn: apsw.Connection, embedder: TextEmbedder, query: str, k: int, *,
                 folder_ids: Sequence[int] | None = None, min_score: float = 0.0,
                 query_vector: np.ndarray | None = None, scale: tuple[float, float] | None = None,
                 rare_words: bool = False) -> list[Match]:
    """The ``k`` note chunks best matching ``query`` (of ``folder_ids``, None: every folder), best first, as
    Matches, none below ``min_score`` similarity.

    Scores are z-scores like chat passages': on ``scale`` (the mean and spread of the question's similarity
    over the chats searched, ``Retrieval.scale``) when given, so both sources rank on one scale; else over
    the chunks searched. Not on their own when chats are asked too: a z-score cannot exceed the square
    root of how many were scored, so a folder of 20 chunks would always lose to 20,000 chat windows.
    ``rare_words``: lift chunks sharing a rare word with ``query``, as the chats' passages are (AskOptions)."""
    if k <= 0 or (folder_ids is not None and not folder_ids):
        return []
    vector = embedder.embed_query(query) if query_vector is None else query_vector
    hits = ranked_chunks(conn, embedder, vector, k, folder_ids, min_score=min_score, scale=scale,
                         rare_words_of=query if rare_words else None)
    lines = _best_lines(embedder, vector, [hit.chunk for hit in hits[:ANSWER_MESSAGE_PASSAGES]])
    return [_match(hit.chunk, hit.similarity, hit.score, lines[n] if n < len(lines) else ())
            for n, hit in enumerate(hits)]


def _match(chunk: StoredNoteChunk, similarity: float, score: float, best_lines: tuple[int, ...]) -> Match:
    source = NoteSource(chunk.folder_id, chunk.file_id, chunk.path, chunk.relative_path, chunk.kind,
                        chunk.heading_path, chunk.page, chunk.start, chunk.end, best_lines)
    return Match(chunk.id, None, chunk.title, source.location, [], chunk.text, [], similarity, score,
                 excerpt=chunk.text, note=source)


def _best_lines(embedder: TextEmbedder, query: np.ndarray, chunks: Sequence[StoredNoteChunk]) -> list[tuple[int, ...]]:
    """Per chunk, the index of its line nearest to the question (among lines that say something)."""
    candidates = [[(n, line) for n, line in enumerate(chunk.text.split("\n"))
                   if len(line.strip()) >= MIN_LINE_CHARS][:MAX_LINES_COMPARED] for chunk in chunks]
    texts = [f"{chunk.title}: {line.strip()}" for chunk, lines in zip(chunks, candidates) for _, line in lines]
    if not texts:
        return [() for _ in chunks]
    similarity = iter((embedder.embed_passages(texts) @ query).tolist())
    chosen = []
    for lines in candidates:
        scored = [(next(similarity), n) for n, _ in lines]
        chosen.append((max(scored)[1],) if scored else ())
    return chosen
