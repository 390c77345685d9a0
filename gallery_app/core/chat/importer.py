"""Importing a WhatsApp export: parse → messages → passages → embeddings → store, all or nothing.

The slow part (embedding) happens before anything is written; the write itself is one
short transaction per chat, so a crash or a cancel leaves the previous state. The same
export imported twice adds nothing; a longer export of a chat already here adds only its
new messages, and only the days that gained messages are cut into passages again.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

import apsw
import numpy as np

from gallery_app.core.chat.chunking import Chunk, ChunkingConfig, ChunkInput, chunk_messages
from gallery_app.core.chat.export_file import ChatExport, ChatFileError, read_export
from gallery_app.core.chat.messages import Message, MessageKind, ParsedChat
from gallery_app.core.chat.whatsapp import parse_chat_text
from gallery_app.core.errors import Cancelled
from gallery_app.core.models.runtimes.embedders import TextEmbedder
from gallery_app.core.store import atomic, ensure_vector_table, insert_vectors
from gallery_app.core.store.vectors import VectorTable, delete_vectors

#: (stage, done, total); stages: "parsed", "embedded", "stored".
ImportProgress = Callable[[str, int, int], None]
EMBED_BATCH = 32
WINDOW_METADATA = {"chat_id": "integer", "chunk_id": "integer", "day": "text"}
VECTOR_KIND = "windows"
#: Share of an export's messages that must already be in a chat for it to count as the same chat.
SAME_CHAT_OVERLAP = 0.5


@dataclass
class ImportSummary:
    chat_id: int
    title: str
    new_chat: bool
    messages_in_file: int
    messages_added: int
    participants: list[str]
    first: datetime | None
    last: datetime | None
    skipped_lines: int
    attachments: int
    media_placeholders: int
    system_messages: int
    passages_added: int
    windows_added: int = 0
    skipped_examples: list[tuple[int, str]] = field(default_factory=list)

    def describe(self) -> str:
        span = f"{self.first:%d %b %Y} to {self.last:%d %b %Y}" if self.first and self.last else ""
        if self.messages_added == 0:
            head = f"“{self.title}” is already up to date: all {self.messages_in_file} messages were imported before."
        elif self.new_chat:
            head = f"Imported “{self.title}”: {self.messages_added} messages from {span}."
        else:
            head = f"Added {self.messages_added} new messages to “{self.title}” (now up to {self.last:%d %b %Y})."
        details = [f"{len(self.participants)} people: {', '.join(self.participants)}"] if self.participants else []
        if self.attachments:
            details.append(f"{self.attachments} attachments")
        if self.media_placeholders:
            details.append(f"{self.media_placeholders} media not included in the export")
        if self.skipped_lines:
            details.append(f"{self.skipped_lines} lines before the first message could not be read")
        return head + (" " + "; ".join(details) + "." if details else "")


def message_keys(messages: list[Message]) -> list[str]:
    """A stable identity per message; a repeat of the same text in the same minute gets its own key."""
    seen: Counter[tuple] = Counter()
    keys = []
    for message in messages:
        identity = (message.timestamp.isoformat(), message.sender or "", message.text)
        seen[identity] += 1
        raw = json.dumps([*identity, seen[identity]], ensure_ascii=False)
        keys.append(hashlib.sha1(raw.encode("utf-8")).hexdigest())
    return keys


def _find_same_chat(conn: apsw.Connection, keys: list[str]) -> int | None:
    """The chat that already holds most of these messages, if it holds enough of them to be the same chat."""
    if not keys:
        return None
    best: Counter[int] = Counter()
    for start in range(0, len(keys), 900):
        batch = keys[start:start + 900]
        rows = conn.execute(
            f"SELECT chat_id, count(*) FROM messages WHERE message_key IN ({','.join('?' * len(batch))}) "
            "GROUP BY chat_id", batch)
        for chat_id, count in rows:
            best[chat_id] += count
    if not best:
        return None
    chat_id, overlap = best.most_common(1)[0]
    existing = conn.execute("SELECT count(*) FROM messages WHERE chat_id = ?", (chat_id,)).fetchone()[0]
    return chat_id if overlap >= SAME_CHAT_OVERLAP * min(len(keys), existing) else None


#: A quoted name in a system line: the group's name or subject, set or changed, in any language
#: ('created group "Zo stuur ik het maar 1x"', 'changed the subject to “More than Squash”').
_QUOTED_NAME = re.compile(r'["“„«‘\'].{1,200}?["”“»’\']')


def _chunkable(message_id: int, timestamp: datetime, sender: str | None, text: str,
               kind: MessageKind) -> ChunkInput | None:
    if kind is MessageKind.SYSTEM and _QUOTED_NAME.search(text):
        return ChunkInput(message_id, timestamp, "", text)  # "what is this group called?" is answered here
    if kind is not MessageKind.TEXT or not sender or not text.strip():
        return None  # other system lines, media placeholders and deleted messages carry nothing to find
    return ChunkInput(message_id, timestamp, sender, text)


def _existing_messages_on_days(conn: apsw.Connection, chat_id: int, days: set[date]) -> list[ChunkInput]:
    inputs = []
    for day in sorted(days):
        rows = conn.execute(
            "SELECT id, ts, sender, text, kind FROM messages WHERE chat_id = ? AND substr(ts, 1, 10) = ? "
            "ORDER BY ts, id", (chat_id, day.isoformat()))
        for message_id, ts, sender, text, kind in rows:
            item = _chunkable(message_id, datetime.fromisoformat(ts), sender, text, MessageKind(kind))
            if item:
                inputs.append(item)
    return inputs


def vector_table_for(conn: apsw.Connection, embedder: TextEmbedder) -> VectorTable:
    return ensure_vector_table(conn, VECTOR_KIND, embedder.model_key, embedder.dims, metadata=WINDOW_METADATA)


def _embed(embedder: TextEmbedder, texts: list[str], progress: ImportProgress | None,
           cancel: Callable[[], bool] | None) -> np.ndarray:
    # A batch is padded to its longest text, so texts of similar length are embedded together (about 40%
    # less model time with MiniLM on the demo chat) and the rows put back in order after. The batches
    # run in a shuffled order, so progress so far predicts the time left (shortest first would not).
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    batches = [order[start:start + EMBED_BATCH] for start in range(0, len(texts), EMBED_BATCH)]
    vectors = np.zeros((len(texts), embedder.dims), np.float32)
    done = 0
    for number in np.random.default_rng(0).permutation(len(batches)):
        if cancel is not None and cancel():
            raise Cancelled("The import was cancelled; nothing was changed.")
        batch = batches[number]
        vectors[batch] = embedder.embed_passages([texts[i] for i in batch])
        done += len(batch)
        if progress:
            progress("embedded", done, len(texts))
    return vectors


def import_chat(conn: apsw.Connection, source: Path | ChatExport, embedder: TextEmbedder, *,
                progress: ImportProgress | None = None, cancel: Callable[[], bool] | None = None,
                config: ChunkingConfig = ChunkingConfig(), title: str | None = None) -> ImportSummary:
    export = source if isinstance(source, ChatExport) else read_export(Path(source))
    parsed: ParsedChat = parse_chat_text(export.text)
    messages = parsed.messages
    if not messages:
        raise ChatFileError(f"No WhatsApp messages were found in {export.source.name}.",
                            hint="Choose the _chat.txt or the .zip WhatsApp made (More › Export chat).")
    if progress:
        progress("parsed", len(messages), len(messages))
    keys = message_keys(messages)
    chat_id = _find_same_chat(conn, keys)
    known = set()
    if chat_id is not None:
        known = {row[0] for row in conn.execute("SELECT message_key FROM messages WHERE chat_id = ?", (chat_id,))}
    fresh = [(key, message) for key, message in zip(keys, messages) if key not in known]

    # New messages get provisional negative ids until the insert gives them real ones.
    provisional = {-1 - i: message for i, (_key, message) in enumerate(fresh)}
    affected_days = {message.timestamp.date() for _key, message in fresh}
    inputs = _existing_messages_on_days(conn, chat_id, affected_days) if chat_id is not None else []
    inputs += [item for pid, m in provisional.items()
               if (item := _chunkable(pid, m.timestamp, m.sender, m.text, m.kind))]
    inputs.sort(key=lambda item: (item.timestamp, item.id >= 0, abs(item.id)))
    chunks = chunk_messages(inputs, embedder.count_tokens, max_tokens=embedder.max_tokens, config=config)
    windows = [chunk.search_units(config) for chunk in chunks]
    vectors = _embed(embedder, [text for chunk_windows in windows for _ids, text in chunk_windows], progress, cancel)
    if cancel is not None and cancel():
        raise Cancelled("The import was cancelled; nothing was changed.")

    new_chat = chat_id is None
    with atomic(conn):
        table = vector_table_for(conn, embedder)
        if new_chat:
            conn.execute("INSERT INTO chats(title, source_path, date_order) VALUES (?, ?, ?)",
                         (title or export.title, str(export.source), parsed.date_order))
            chat_id = conn.last_insert_rowid()
        real_ids = _insert_messages(conn, chat_id, fresh)
        _replace_chunks(conn, table, embedder, chat_id, affected_days, chunks, windows, vectors, real_ids)
        conn.execute(
            "INSERT INTO chat_imports(chat_id, source_path, messages_in_file, messages_added, skipped_lines, "
            "attachments) VALUES (?, ?, ?, ?, ?, ?)",
            (chat_id, str(export.source), len(messages), len(fresh), len(parsed.skipped_lines),
             len(parsed.attachments)))
    if progress:
        progress("stored", len(chunks), len(chunks))
    chat_title = conn.execute("SELECT title FROM chats WHERE id = ?", (chat_id,)).fetchone()[0]
    stamps = [m.timestamp for m in messages if m.kind is not MessageKind.SYSTEM]
    return ImportSummary(
        chat_id=chat_id, title=chat_title, new_chat=new_chat, messages_in_file=len(messages),
        messages_added=len(fresh), participants=parsed.participants, first=min(stamps) if stamps else None,
        last=max(stamps) if stamps else None,
        skipped_lines=len(parsed.skipped_lines), attachments=len(parsed.attachments),
        media_placeholders=sum(m.kind is MessageKind.MEDIA for m in messages),
        system_messages=sum(m.kind is MessageKind.SYSTEM for m in messages), passages_added=len(chunks),
        windows_added=len(vectors),
        skipped_examples=parsed.skipped_lines[:5],
    )


def _insert_messages(conn: apsw.Connection, chat_id: int, fresh: list[tuple[str, Message]]) -> dict[int, int]:
    real_ids = {}
    for index, (key, message) in enumerate(fresh):
        conn.execute(
            "INSERT INTO messages(chat_id, ts, sender, text, kind, attachment, edited, source_line, message_key) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (chat_id, message.timestamp.isoformat(), message.sender, message.text, message.kind.value,
             message.attachment, int(message.edited), message.line, key))
        real_ids[-1 - index] = conn.last_insert_rowid()
    return real_ids


def _replace_chunks(conn: apsw.Connection, table: VectorTable, embedder: TextEmbedder, chat_id: int,
                    days: set[date], chunks: list[Chunk], windows: list[list[tuple[list[int], str]]],
                    vectors: np.ndarray, real_ids: dict[int, int]) -> None:
    old = [row[0] for day in sorted(days)
           for row in conn.execute("SELECT id FROM chunks WHERE chat_id = ? AND day = ?", (chat_id, day.isoformat()))]
    old_windows = [row[0] for chunk_id in old
                   for row in conn.execute("SELECT id FROM chunk_windows WHERE chunk_id = ?", (chunk_id,))]
    _delete_vectors_everywhere(conn, old_windows)
    for chunk_id in old:
        # External-content FTS rows are removed by repeating the indexed values with the 'delete' command.
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rowid, text) SELECT 'delete', id, text FROM chunks "
                     "WHERE id = ?", (chunk_id,))
        conn.execute("DELETE FROM chunks WHERE id = ?", (chunk_id,))  # cascades to chunk_windows
    window_ids, window_meta = [], {"chat_id": [], "chunk_id": [], "day": []}
    for chunk, chunk_windows in zip(chunks, windows):
        ids = [real_ids.get(i, i) for i in chunk.message_ids]
        conn.execute(
            "INSERT INTO chunks(chat_id, day, first_message_id, last_message_id, message_ids, senders, text, tokens) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (chat_id, chunk.day.isoformat(), ids[0], ids[-1], json.dumps(ids),
             json.dumps(chunk.senders, ensure_ascii=False), chunk.text, chunk.tokens))
        chunk_id = conn.last_insert_rowid()
        conn.execute("INSERT INTO chunks_fts(rowid, text) VALUES (?, ?)", (chunk_id, chunk.text))
        for members, text in chunk_windows:
            conn.execute("INSERT INTO chunk_windows(chunk_id, message_ids, text) VALUES (?, ?, ?)",
                         (chunk_id, json.dumps([real_ids.get(i, i) for i in members]), text))
            window_ids.append(conn.last_insert_rowid())
            window_meta["chat_id"].append(chat_id)
            window_meta["chunk_id"].append(chunk_id)
            window_meta["day"].append(chunk.day.isoformat())
    if window_ids:
        insert_vectors(conn, table, window_ids, vectors, model_key=embedder.model_key, metadata=window_meta)


def _delete_vectors_everywhere(conn: apsw.Connection, window_ids: list[int]) -> None:
    """A replaced passage's windows leave every model's table, not only the current embedder's."""
    if not window_ids:
        return
    from gallery_app.core.store import list_vector_tables

    for table in list_vector_tables(conn):
        if table.kind == VECTOR_KIND:
            delete_vectors(conn, table, window_ids)


def missing_vectors(conn: apsw.Connection, embedder: TextEmbedder) -> int:
    """How many search windows the current embedder has not embedded yet (e.g. after switching models)."""
    table = vector_table_for(conn, embedder)
    total = conn.execute("SELECT count(*) FROM chunk_windows").fetchone()[0]
    indexed = conn.execute(f"SELECT count(*) FROM {table.name}").fetchone()[0]
    return max(0, total - indexed)


def reindex(conn: apsw.Connection, embedder: TextEmbedder, *, progress: ImportProgress | None = None,
            cancel: Callable[[], bool] | None = None) -> int:
    """Embed every search window the current embedder's table lacks; returns how many were added."""
    table = vector_table_for(conn, embedder)
    rows = conn.execute(
        "SELECT w.id, c.chat_id, c.id, c.day, w.text FROM chunk_windows w JOIN chunks c ON c.id = w.chunk_id "
        f"WHERE w.id NOT IN (SELECT rowid FROM {table.name}) ORDER BY w.id"
    ).fetchall()
    vectors = _embed(embedder, [row[4] for row in rows], progress, cancel)
    with atomic(conn):
        if rows:
            insert_vectors(conn, table, [row[0] for row in rows], vectors, model_key=embedder.model_key,
                           metadata={"chat_id": [r[1] for r in rows], "chunk_id": [r[2] for r in rows],
                                     "day": [r[3] for r in rows]})
    return len(rows)
