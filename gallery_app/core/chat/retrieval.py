"""Finding the passages that answer a question: vector search, optionally fused with keyword search.

Vector search finds paraphrases ("who paid" ↔ "I put the room on my card"); keyword search
(SQLite FTS5, BM25) finds rare exact words (names, places, numbers) that a small embedder
blurs. Reciprocal rank fusion combines the two rankings without calibrating their scores.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import apsw
import numpy as np

from gallery_app.core.chat.importer import missing_vectors, vector_table_for
from gallery_app.core.chat.repository import chat_titles, chunks_by_id
from gallery_app.core.models.runtimes.embedders import TextEmbedder
from gallery_app.core.store import knn

#: Candidates each retriever contributes before fusion, per requested result.
CANDIDATES_PER_RESULT = 5
RRF_K = 60
_WORD = re.compile(r"\w{3,}", re.UNICODE)


@dataclass(frozen=True)
class Match:
    chunk_id: int
    chat_id: int
    chat_title: str
    day: str
    senders: list[str]
    text: str
    message_ids: list[int]
    #: Cosine similarity of the passage to the query (1 − cosine distance).
    similarity: float
    #: The fused rank score the matches are ordered by.
    score: float


@dataclass
class Retrieval:
    query: str
    matches: list[Match] = field(default_factory=list)
    #: Passages the current embedder has not embedded (searching them needs a re-index).
    unindexed: int = 0

    @property
    def passage_count(self) -> int:
        return len(self.matches)

    @property
    def chat_count(self) -> int:
        return len({match.chat_id for match in self.matches})

    def describe(self) -> str:
        if not self.matches:
            return "No passages found."
        passages = "passage" if self.passage_count == 1 else "passages"
        chats = "chat" if self.chat_count == 1 else "chats"
        return f"Found {self.passage_count} {passages} in {self.chat_count} {chats}"


def fts_query(text: str) -> str | None:
    """An FTS5 query matching any word of ``text`` (quoted, so no word can act as FTS syntax)."""
    words = list(dict.fromkeys(word.lower() for word in _WORD.findall(text)))
    return " OR ".join(f'"{word}"' for word in words) or None


class ChatRetriever:
    def __init__(self, conn: apsw.Connection, embedder: TextEmbedder, *, use_keywords: bool = False):
        self.conn = conn
        self.embedder = embedder
        self.use_keywords = use_keywords
        self.table = vector_table_for(conn, embedder)

    def _vector_ranking(self, query: np.ndarray, limit: int, chats: Sequence[int] | None) -> list[int]:
        if chats is None:
            hits = knn(self.conn, self.table, query, model_key=self.embedder.model_key, k=limit)
        else:
            hits = [hit for chat_id in chats for hit in knn(self.conn, self.table, query, model_key=self.embedder.model_key,
                                                             k=limit, where={"chat_id": int(chat_id)})]
            hits.sort(key=lambda hit: hit.distance)
        return [hit.rowid for hit in hits[:limit]]

    def _keyword_ranking(self, question: str, limit: int, chats: Sequence[int] | None) -> list[int]:
        query = fts_query(question)
        if query is None:
            return []
        chat_filter = f" AND c.chat_id IN ({','.join('?' * len(chats))})" if chats else ""
        rows = self.conn.execute(
            "SELECT f.rowid FROM chunks_fts f JOIN chunks c ON c.id = f.rowid "
            f"WHERE chunks_fts MATCH ?{chat_filter} ORDER BY bm25(chunks_fts) LIMIT ?",
            (query, *(chats or ()), limit))
        return [row[0] for row in rows]

    def _similarities(self, query: np.ndarray, chunk_ids: list[int]) -> dict[int, float]:
        if not chunk_ids:
            return {}
        placeholders = ",".join("?" * len(chunk_ids))
        rows = self.conn.execute(f"SELECT rowid, embedding FROM {self.table.name} WHERE rowid IN ({placeholders})",
                                 chunk_ids)
        return {rowid: float(np.frombuffer(blob, dtype=np.float32) @ query) for rowid, blob in rows}

    def retrieve(self, question: str, k: int = 4, min_score: float = 0.0,
                 chats: Sequence[int] | None = None) -> Retrieval:
        """The ``k`` passages that best answer ``question``, best first, none below ``min_score`` similarity."""
        result = Retrieval(question, unindexed=missing_vectors(self.conn, self.embedder))
        if not question.strip() or k <= 0:
            return result
        query = self.embedder.embed_query(question)
        limit = max(k * CANDIDATES_PER_RESULT, 20)
        rankings = [self._vector_ranking(query, limit, chats)]
        if self.use_keywords:
            rankings.append(self._keyword_ranking(question, limit, chats))
        fused: dict[int, float] = {}
        for ranking in rankings:
            for rank, chunk_id in enumerate(ranking):
                fused[chunk_id] = fused.get(chunk_id, 0.0) + 1.0 / (RRF_K + rank + 1)
        similarities = self._similarities(query, list(fused))
        ordered = sorted(fused, key=lambda chunk_id: (-fused[chunk_id], -similarities.get(chunk_id, -1.0)))
        chosen = [c for c in ordered if similarities.get(c, -1.0) >= min_score][:k]
        chunks = chunks_by_id(self.conn, chosen)
        titles = chat_titles(self.conn)
        for chunk_id in chosen:
            chunk = chunks[chunk_id]
            result.matches.append(Match(chunk_id, chunk.chat_id, titles.get(chunk.chat_id, ""), chunk.day,
                                        chunk.senders, chunk.text, chunk.message_ids, similarities[chunk_id],
                                        fused[chunk_id]))
        return result
