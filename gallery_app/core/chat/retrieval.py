"""Finding the passages that answer a question: vector search, optionally fused with keyword search.

Vector search finds paraphrases ("who paid" ↔ "I put the room on my card"); keyword search
(SQLite FTS5, BM25) finds rare exact words (names, places, numbers) that a small embedder
blurs. Reciprocal rank fusion combines the two rankings without calibrating their scores.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import apsw
import numpy as np

from gallery_app.core.chat.chunking import message_lines
from gallery_app.core.chat.importer import missing_vectors, vector_table_for
from gallery_app.core.chat.repository import chat_titles, chunks_by_id, messages_by_id
from gallery_app.core.models.runtimes.embedders import TextEmbedder
from gallery_app.core.store import MAX_K
from gallery_app.core.store.vector_search import search

#: Candidates each retriever contributes before fusion, per requested result.
CANDIDATES_PER_RESULT = 5
#: Windows fetched per wanted passage: a passage's several windows often rank together.
WINDOWS_PER_PASSAGE = 4
#: Messages either side of the focus window that go into a match's excerpt.
EXCERPT_MARGIN = 1
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
    #: Cosine similarity of the passage's best window to the query (1 − cosine distance).
    similarity: float
    #: The fused rank score the matches are ordered by.
    score: float
    #: The messages of the best-matching window: what to highlight, and the core of the LLM's context.
    focus_message_ids: list[int] = field(default_factory=list)
    #: ``Name: text`` lines of the focus window and one message either side (within the passage).
    excerpt: str = ""


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
        self._unindexed: int | None = None

    def _vector_ranking(self, query: np.ndarray, limit: int,
                        chats: Sequence[int] | None) -> tuple[list[int], dict[int, tuple[float, int]]]:
        """Passages ranked by their best window; per passage (similarity, best window id)."""
        k = min(MAX_K, limit * WINDOWS_PER_PASSAGE)
        filters = [None] if chats is None else [{"chat_id": int(chat_id)} for chat_id in chats]
        hits = [hit for where in filters
                for hit in search(self.conn, self.table, query, model_key=self.embedder.model_key, k=k, where=where)]
        if not hits:
            return [], {}
        placeholders = ",".join("?" * len(hits))
        owners = dict(self.conn.execute(f"SELECT id, chunk_id FROM chunk_windows WHERE id IN ({placeholders})",
                                        [hit.rowid for hit in hits]))
        best: dict[int, tuple[float, int]] = {}
        for hit in sorted(hits, key=lambda h: h.distance):
            chunk_id = owners.get(hit.rowid)
            if chunk_id is not None and chunk_id not in best:
                best[chunk_id] = (hit.similarity, hit.rowid)
        return list(best)[:limit], best

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

    def _best_windows(self, query: np.ndarray, chunk_ids: list[int]) -> dict[int, tuple[float, int]]:
        """Best window per passage for passages found by keywords only."""
        if not chunk_ids:
            return {}
        placeholders = ",".join("?" * len(chunk_ids))
        rows = self.conn.execute(
            f"SELECT w.chunk_id, v.rowid, v.embedding FROM chunk_windows w JOIN {self.table.name} v ON v.rowid = w.id "
            f"WHERE w.chunk_id IN ({placeholders})", chunk_ids)
        best: dict[int, tuple[float, int]] = {}
        for chunk_id, window_id, blob in rows:
            similarity = float(np.frombuffer(blob, dtype=np.float32) @ query)
            if chunk_id not in best or similarity > best[chunk_id][0]:
                best[chunk_id] = (similarity, window_id)
        return best

    def _excerpt(self, passage_ids: list[int], focus_ids: list[int]) -> str:
        if not focus_ids:
            return ""
        positions = [passage_ids.index(i) for i in focus_ids if i in passage_ids]
        if not positions:
            return ""
        first, last = max(0, min(positions) - EXCERPT_MARGIN), max(positions) + EXCERPT_MARGIN + 1
        messages = messages_by_id(self.conn, passage_ids[first:last])
        return "\n".join(line for m in messages for line in message_lines(m.sender or "", m.text))

    def _window_members(self, window_ids: list[int]) -> dict[int, list[int]]:
        if not window_ids:
            return {}
        placeholders = ",".join("?" * len(window_ids))
        rows = self.conn.execute(f"SELECT id, message_ids FROM chunk_windows WHERE id IN ({placeholders})", window_ids)
        return {window_id: json.loads(ids) for window_id, ids in rows}

    def retrieve(self, question: str, k: int = 4, min_score: float = 0.0,
                 chats: Sequence[int] | None = None) -> Retrieval:
        """The ``k`` passages that best answer ``question``, best first, none below ``min_score`` similarity."""
        if self._unindexed is None:
            # Counting a vec0 table scans it; once per session is enough (imports make new sessions).
            self._unindexed = missing_vectors(self.conn, self.embedder)
        result = Retrieval(question, unindexed=self._unindexed)
        if not question.strip() or k <= 0:
            return result
        query = self.embedder.embed_query(question)
        limit = max(k * CANDIDATES_PER_RESULT, 20)
        vector_ranking, best = self._vector_ranking(query, limit, chats)
        rankings = [vector_ranking]
        if self.use_keywords:
            keyword_ranking = self._keyword_ranking(question, limit, chats)
            rankings.append(keyword_ranking)
            best.update(self._best_windows(query, [c for c in keyword_ranking if c not in best]))
        fused: dict[int, float] = {}
        for ranking in rankings:
            for rank, chunk_id in enumerate(ranking):
                fused[chunk_id] = fused.get(chunk_id, 0.0) + 1.0 / (RRF_K + rank + 1)
        similarity = {chunk_id: best.get(chunk_id, (-1.0, 0))[0] for chunk_id in fused}
        ordered = sorted(fused, key=lambda chunk_id: (-fused[chunk_id], -similarity[chunk_id]))
        chosen = [c for c in ordered if similarity[c] >= min_score][:k]
        chunks = chunks_by_id(self.conn, chosen)
        focus = self._window_members([best[c][1] for c in chosen if c in best])
        titles = chat_titles(self.conn)
        for chunk_id in chosen:
            chunk = chunks[chunk_id]
            focus_ids = focus.get(best.get(chunk_id, (0, -1))[1], [])
            result.matches.append(Match(chunk_id, chunk.chat_id, titles.get(chunk.chat_id, ""), chunk.day,
                                        chunk.senders, chunk.text, chunk.message_ids, similarity[chunk_id],
                                        fused[chunk_id], focus_ids, self._excerpt(chunk.message_ids, focus_ids)))
        return result
