"""Every chat table, read and written here only: chats, their imports, messages, passages (``chunks``,
kept in step with their keyword index ``chunks_fts``), the windows searched inside each passage
(``chunk_windows``) and the windows' vectors (``vec_windows_<model>``, a table per text embedder).

Reading never creates a table: a text embedder without a vector table yet has embedded no window.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import NamedTuple

import apsw
import numpy as np

from gallery_app.core.chat.chunking import Chunk
from gallery_app.core.chat.messages import Message, MessageKind
from gallery_app.core.chat.whatsapp import names_the_group
from gallery_app.core.file_names import to_db
from gallery_app.core.models.runtimes.embedders import TextEmbedder
from gallery_app.core.store import (
    VectorTable, atomic, delete_vectors, ensure_vector_table, existing_vector_table, insert_vectors, list_vector_tables,
)
from gallery_app.core.store.vector_search import HUBNESS, blended_with_groups, similarities

WINDOW_KIND = "windows"
WINDOW_METADATA = {"chat_id": "integer", "chunk_id": "integer", "day": "text"}
#: Share of an export's messages that must already be in a chat for it to count as the same chat.
SAME_CHAT_OVERLAP = 0.5
#: Host parameters per statement, well under SQLite's limit.
_BATCH = 900


@dataclass(frozen=True)
class ChatInfo:
    id: int
    title: str
    participants: list[str]
    message_count: int
    first: datetime | None
    last: datetime | None

    def describe(self) -> str:
        span = (f"{self.first:%d %b %Y} – {self.last:%d %b %Y}" if self.first and self.last else "no messages")
        people = ", ".join(self.participants) or "nobody"
        return f"{self.title} ({self.message_count:,} messages, {span}; {people})"


@dataclass(frozen=True)
class StoredMessage:
    id: int
    chat_id: int
    timestamp: datetime
    sender: str | None
    text: str
    kind: MessageKind
    attachment: str | None
    line: int | None

    @property
    def can_answer(self) -> bool:
        """Whether the message may be what answers a question: a person's, or WhatsApp's line naming the group
        ("You created group "Trip"" answers "What is this group called?"), and not blank."""
        return bool(self.text.strip()) and (bool(self.sender) or (self.kind is MessageKind.SYSTEM
                                                                   and names_the_group(self.text)))


@dataclass(frozen=True)
class StoredChunk:
    id: int
    chat_id: int
    day: str
    message_ids: list[int]
    senders: list[str]
    text: str
    tokens: int


class Window(NamedTuple):
    """A stored window as it is embedded; equal to another only if nothing about it changed."""

    id: int
    chat_id: int
    chunk_id: int
    day: str
    text: str


@dataclass(frozen=True)
class WindowScores:
    """Every window (with a vector) of the chats asked, scored against each query: ``scores[window, query]``."""

    window_ids: np.ndarray
    scores: np.ndarray
    chunk_ids: np.ndarray
    days: np.ndarray
    #: Each window's mean similarity to its nearest other windows (zeros unless asked for).
    hubness: np.ndarray
    #: ``scores`` of each window read within its passage (``window_similarities``'s ``passage_weight``).
    in_passage: np.ndarray


def _placeholders(values: Sequence) -> str:
    return ",".join("?" * len(values))


# --- chats -------------------------------------------------------------------------------------
def chat_participants(conn: apsw.Connection, chat_ids: Sequence[int]) -> list[str]:
    """Who wrote in these chats (system lines are nobody's), the first to write first."""
    if not chat_ids:
        return []
    rows = conn.execute(
        f"SELECT sender FROM messages WHERE chat_id IN ({_placeholders(chat_ids)}) AND sender IS NOT NULL "
        "AND kind != 'system' GROUP BY sender ORDER BY min(id)", list(chat_ids))
    return [row[0] for row in rows]


def list_chats(conn: apsw.Connection) -> list[ChatInfo]:
    rows = conn.execute(
        "SELECT c.id, c.title, count(m.id), min(m.ts), max(m.ts) FROM chats c "
        "LEFT JOIN messages m ON m.chat_id = c.id AND m.kind != 'system' GROUP BY c.id ORDER BY c.id"
    ).fetchall()
    return [
        ChatInfo(chat_id, title, chat_participants(conn, [chat_id]), count,
                 datetime.fromisoformat(first) if first else None, datetime.fromisoformat(last) if last else None)
        for chat_id, title, count, first, last in rows
    ]


def get_chat(conn: apsw.Connection, chat_id: int) -> ChatInfo | None:
    return next((chat for chat in list_chats(conn) if chat.id == chat_id), None)


def chat_titles(conn: apsw.Connection) -> dict[int, str]:
    return dict(conn.execute("SELECT id, title FROM chats"))


def chat_title(conn: apsw.Connection, chat_id: int) -> str:
    return conn.execute("SELECT title FROM chats WHERE id = ?", (chat_id,)).fetchone()[0]


def add_chat(conn: apsw.Connection, title: str, source: Path, date_order: str) -> int:
    conn.execute("INSERT INTO chats(title, source_path, date_order) VALUES (?, ?, ?)",
                 (title, to_db(source), date_order))
    return conn.last_insert_rowid()


def record_import(conn: apsw.Connection, chat_id: int, source: Path, *, messages_in_file: int,
                  messages_added: int, skipped_lines: int, attachments: int) -> None:
    conn.execute(
        "INSERT INTO chat_imports(chat_id, source_path, messages_in_file, messages_added, skipped_lines, "
        "attachments) VALUES (?, ?, ?, ?, ?, ?)",
        (chat_id, to_db(source), messages_in_file, messages_added, skipped_lines, attachments))


def find_same_chat(conn: apsw.Connection, keys: Sequence[str]) -> tuple[int | None, frozenset[str]]:
    """The chat that already holds most of these messages (``message_key``s), if it holds enough of them
    to be the same chat, and the keys it holds; ``(None, frozenset())`` for a chat not imported yet."""
    if not keys:
        return None, frozenset()
    best: Counter[int] = Counter()
    for start in range(0, len(keys), _BATCH):
        batch = list(keys[start:start + _BATCH])
        rows = conn.execute(
            f"SELECT chat_id, count(*) FROM messages WHERE message_key IN ({_placeholders(batch)}) GROUP BY chat_id",
            batch)
        for chat_id, count in rows:
            best[chat_id] += count
    if not best:
        return None, frozenset()
    chat_id, overlap = best.most_common(1)[0]
    existing = conn.execute("SELECT count(*) FROM messages WHERE chat_id = ?", (chat_id,)).fetchone()[0]
    if overlap < SAME_CHAT_OVERLAP * min(len(keys), existing):
        return None, frozenset()
    return chat_id, frozenset(row[0] for row in conn.execute(
        "SELECT message_key FROM messages WHERE chat_id = ?", (chat_id,)))


# --- messages ----------------------------------------------------------------------------------
_MESSAGE_COLUMNS = "id, chat_id, ts, sender, text, kind, attachment, source_line"


def _message(row) -> StoredMessage:
    message_id, chat_id, ts, sender, text, kind, attachment, line = row
    return StoredMessage(message_id, chat_id, datetime.fromisoformat(ts), sender, text, MessageKind(kind),
                         attachment, line)


def messages_by_id(conn: apsw.Connection, ids: list[int]) -> list[StoredMessage]:
    if not ids:
        return []
    rows = conn.execute(f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE id IN ({_placeholders(ids)}) ORDER BY ts, id",
                        ids)
    return [_message(row) for row in rows]


def chat_messages(conn: apsw.Connection, chat_id: int) -> list[StoredMessage]:
    rows = conn.execute(f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE chat_id = ? ORDER BY ts, id", (chat_id,))
    return [_message(row) for row in rows]


def messages_on_days(conn: apsw.Connection, chat_id: int, days: Iterable[date]) -> list[StoredMessage]:
    """The chat's messages on ``days`` (its phone's local days), in time order."""
    return [_message(row) for day in sorted(days) for row in conn.execute(
        f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE chat_id = ? AND substr(ts, 1, 10) = ? ORDER BY ts, id",
        (chat_id, day.isoformat()))]


def messages_before_day(conn: apsw.Connection, chat_id: int, day: date, limit: int = 20) -> list[StoredMessage]:
    """The chat's last ``limit`` messages before ``day``, latest first."""
    return [_message(row) for row in conn.execute(
        f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE chat_id = ? AND ts < ? ORDER BY ts DESC, id DESC LIMIT ?",
        (chat_id, day.isoformat(), limit))]


def add_messages(conn: apsw.Connection, chat_id: int, keyed: Sequence[tuple[str, Message]]) -> list[int]:
    """Stores ``(message_key, message)`` pairs in order; returns their ids in the same order."""
    ids = []
    for key, message in keyed:
        conn.execute(
            "INSERT INTO messages(chat_id, ts, sender, text, kind, attachment, edited, source_line, message_key) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (chat_id, message.timestamp.isoformat(), message.sender, message.text, message.kind.value,
             message.attachment, int(message.edited), message.line, key))
        ids.append(conn.last_insert_rowid())
    return ids


# --- passages ----------------------------------------------------------------------------------
def chunks_by_id(conn: apsw.Connection, ids: list[int]) -> dict[int, StoredChunk]:
    if not ids:
        return {}
    rows = conn.execute(
        f"SELECT id, chat_id, day, message_ids, senders, text, tokens FROM chunks WHERE id IN ({_placeholders(ids)})",
        ids)
    return {row[0]: StoredChunk(row[0], row[1], row[2], json.loads(row[3]), json.loads(row[4]), row[5], row[6])
            for row in rows}


def replace_chunks(conn: apsw.Connection, chat_id: int, days: Iterable[date], chunks: Sequence[Chunk],
                   windows: Sequence[Sequence[tuple[list[int], str]]]) -> None:
    """The chat's passages of ``days`` (with their keyword rows and windows, ``windows[i]`` those of
    ``chunks[i]``) in place of the old ones; the old windows' vectors go, the new ones' come later."""
    old = [row[0] for day in sorted(days)
           for row in conn.execute("SELECT id FROM chunks WHERE chat_id = ? AND day = ?", (chat_id, day.isoformat()))]
    old_windows = [row[0] for chunk_id in old
                   for row in conn.execute("SELECT id FROM chunk_windows WHERE chunk_id = ?", (chunk_id,))]
    _delete_window_vectors_everywhere(conn, old_windows)
    for chunk_id in old:
        # External-content FTS rows are removed by repeating the indexed values with the 'delete' command.
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rowid, text) SELECT 'delete', id, text FROM chunks "
                     "WHERE id = ?", (chunk_id,))
        conn.execute("DELETE FROM chunks WHERE id = ?", (chunk_id,))  # cascades to chunk_windows
    for chunk, chunk_windows in zip(chunks, windows):
        ids = chunk.message_ids
        conn.execute(
            "INSERT INTO chunks(chat_id, day, first_message_id, last_message_id, message_ids, senders, text, tokens) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (chat_id, chunk.day.isoformat(), ids[0], ids[-1], json.dumps(ids),
             json.dumps(chunk.senders, ensure_ascii=False), chunk.text, chunk.tokens))
        chunk_id = conn.last_insert_rowid()
        conn.execute("INSERT INTO chunks_fts(rowid, text) VALUES (?, ?)", (chunk_id, chunk.text))
        for members, text in chunk_windows:
            conn.execute("INSERT INTO chunk_windows(chunk_id, message_ids, text) VALUES (?, ?, ?)",
                         (chunk_id, json.dumps(members), text))


def passage_times(conn: apsw.Connection) -> dict[int, tuple[datetime, datetime]]:
    """Each passage's first and last message time."""
    rows = conn.execute(
        "SELECT c.id, f.ts, l.ts FROM chunks c JOIN messages f ON f.id = c.first_message_id "
        "JOIN messages l ON l.id = c.last_message_id")
    return {chunk_id: (datetime.fromisoformat(first), datetime.fromisoformat(last)) for chunk_id, first, last in rows}


def passage_days(conn: apsw.Connection, chats: Sequence[int] | None) -> tuple[date | None, date | None]:
    """The first and last day with a passage, in ``chats`` (or all)."""
    chat_filter = f" WHERE chat_id IN ({_placeholders(chats)})" if chats else ""
    first, last = conn.execute(f"SELECT min(day), max(day) FROM chunks{chat_filter}", list(chats or ())).fetchone()
    return (date.fromisoformat(first) if first else None, date.fromisoformat(last) if last else None)


def passages_matching(conn: apsw.Connection, fts_query: str, chats: Sequence[int] | None, limit: int, *,
                      by_rank: bool) -> list[int]:
    """Passages (of ``chats``, or all) matching the FTS5 query, best BM25 first when ``by_rank``."""
    chat_filter = f" AND c.chat_id IN ({_placeholders(chats)})" if chats else ""
    order = " ORDER BY bm25(chunks_fts)" if by_rank else ""
    rows = conn.execute(
        "SELECT f.rowid FROM chunks_fts f JOIN chunks c ON c.id = f.rowid "
        f"WHERE chunks_fts MATCH ?{chat_filter}{order} LIMIT ?", (fts_query, *(chats or ()), limit))
    return [row[0] for row in rows]


# --- windows -----------------------------------------------------------------------------------
_WINDOWS = "SELECT w.id, c.chat_id, c.id, c.day, w.text FROM chunk_windows w JOIN chunks c ON c.id = w.chunk_id"


def window_messages(conn: apsw.Connection, window_ids: list[int]) -> dict[int, list[int]]:
    """The ids of each window's messages."""
    if not window_ids:
        return {}
    rows = conn.execute(f"SELECT id, message_ids FROM chunk_windows WHERE id IN ({_placeholders(window_ids)})",
                        window_ids)
    return {window_id: json.loads(ids) for window_id, ids in rows}


def window_texts(conn: apsw.Connection) -> dict[int, str]:
    return dict(conn.execute("SELECT id, text FROM chunk_windows"))


def window_count_and_newest(conn: apsw.Connection) -> tuple[int, int | None]:
    """How many windows there are and the newest one's id: changed by every import that adds or replaces any."""
    count, newest = conn.execute("SELECT count(*), max(id) FROM chunk_windows").fetchone()
    return count, newest


# --- the windows' vectors ----------------------------------------------------------------------
def ensure_window_table(conn: apsw.Connection, embedder: TextEmbedder) -> VectorTable:
    """The embedder's vector table, created on first use; refused (``VectorModelMismatch``) if it disagrees."""
    return ensure_vector_table(conn, WINDOW_KIND, embedder.model_key, embedder.dims, metadata=WINDOW_METADATA)


def _existing_window_table(conn: apsw.Connection, embedder: TextEmbedder) -> VectorTable | None:
    return existing_vector_table(conn, WINDOW_KIND, embedder.model_key, embedder.dims, metadata=WINDOW_METADATA)


def missing_window_vectors(conn: apsw.Connection, embedder: TextEmbedder) -> int:
    """How many windows the embedder has not embedded yet (e.g. after switching models)."""
    table = _existing_window_table(conn, embedder)
    missing = f" WHERE id NOT IN (SELECT rowid FROM {table.name})" if table is not None else ""
    return conn.execute(f"SELECT count(*) FROM chunk_windows{missing}").fetchone()[0]


def windows_without_vectors(conn: apsw.Connection, embedder: TextEmbedder, chat_id: int | None = None) -> list[Window]:
    """The windows (of ``chat_id``, or all) the embedder has not embedded yet, oldest first."""
    table = _existing_window_table(conn, embedder)
    conditions = ([f"w.id NOT IN (SELECT rowid FROM {table.name})"] if table is not None else []) + (
        ["c.chat_id = ?"] if chat_id is not None else [])
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    rows = conn.execute(f"{_WINDOWS}{where} ORDER BY w.id", (chat_id,) if chat_id is not None else ())
    return [Window(*row) for row in rows]


def store_window_vectors(conn: apsw.Connection, embedder: TextEmbedder, windows: Sequence[Window],
                         vectors: np.ndarray) -> None:
    """``vectors[i]`` as the embedder's vector of ``windows[i]``, committed together.

    Another import may have replaced some passages while these windows were embedded (their windows,
    and ids, gone or reused): only windows still as they were get their vectors.
    """
    with atomic(conn):
        ids = [window.id for window in windows]
        current = {Window(*row) for row in conn.execute(f"{_WINDOWS} WHERE w.id IN ({_placeholders(ids)})", ids)}
        keep = [i for i, window in enumerate(windows) if window in current]
        if keep:
            insert_vectors(conn, ensure_window_table(conn, embedder), [windows[i].id for i in keep], vectors[keep],
                           model_key=embedder.model_key,
                           metadata={"chat_id": [windows[i].chat_id for i in keep],
                                     "chunk_id": [windows[i].chunk_id for i in keep],
                                     "day": [windows[i].day for i in keep]})


def _delete_window_vectors_everywhere(conn: apsw.Connection, window_ids: list[int]) -> None:
    """A replaced passage's windows leave every model's table, not only the current embedder's."""
    if not window_ids:
        return
    for table in list_vector_tables(conn):
        if table.kind == WINDOW_KIND:
            delete_vectors(conn, table, window_ids)


def window_similarities(conn: apsw.Connection, embedder: TextEmbedder, queries: np.ndarray,
                        chats: Sequence[int] | None, *, hubness_k: int = 0,
                        passage_weight: float = 0.0) -> WindowScores | None:
    """Every embedded window of ``chats`` (None: all) scored against each query; None if there is none.

    With ``passage_weight``, ``in_passage`` scores each window as if its vector had been moved that much
    towards its passage's centroid (the mean of the passage's windows): a window is also read as part of
    what its passage is about."""
    table = _existing_window_table(conn, embedder)
    if table is None:
        return None
    where = {"chat_id": int(chats[0])} if chats is not None and len(chats) == 1 else None
    window_ids, scores, metadata = similarities(conn, table, queries, model_key=embedder.model_key, where=where,
                                                hubness_k=hubness_k, within="chunk_id" if passage_weight else None)
    if chats is not None and len(chats) != 1:
        keep = np.isin(metadata["chat_id"], np.asarray(list(chats), dtype=np.int64))
        window_ids, scores = window_ids[keep], scores[keep]
        metadata = {name: values[keep] for name, values in metadata.items()}
    if len(window_ids) == 0:
        return None
    hubness = metadata.get(HUBNESS, np.zeros(len(window_ids), np.float32))
    return WindowScores(window_ids, scores, metadata["chunk_id"].astype(np.int64), metadata["day"], hubness,
                        blended_with_groups(scores, metadata, passage_weight))
