"""Importing a WhatsApp export: parse → messages → passages → embeddings → store, in resumable steps.

Two kinds of step write. First one transaction stores the new messages with their passages and
search units, after finding under the same write lock which chat they belong to (so the same
export imported twice at once is one chat). Then the units are embedded a batch at a time, each
batch committed with its vectors: a cancelled or killed import keeps what it finished, and
importing the file again (or ``reindex``) embeds only the units still missing. Search meanwhile
works on the units that have vectors and counts the others as not indexed yet; each write
transaction is short, so other writers wait seconds, not the hours a large chat takes to embed.
The same export imported twice adds nothing; a longer export of a chat already here adds only its
new messages, and only the days that gained messages are cut into passages again.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
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
from gallery_app.core.eta import describe_duration
from gallery_app.core.models.runtimes.embedders import TextEmbedder
from gallery_app.core.file_names import to_db
from gallery_app.core.store import atomic, ensure_vector_table, insert_vectors
from gallery_app.core.store.vectors import VectorTable, delete_vectors

#: (stage, done, total); stages: "parsed", "embedded", "stored".
ImportProgress = Callable[[str, int, int], None]
EMBED_BATCH = 32
WINDOW_METADATA = {"chat_id": "integer", "chunk_id": "integer", "day": "text"}
VECTOR_KIND = "windows"
#: Share of an export's messages that must already be in a chat for it to count as the same chat.
SAME_CHAT_OVERLAP = 0.5


#: Batches embedded (and timed) before the time the rest will take is estimated.
ESTIMATE_AFTER_BATCHES = 2


@dataclass(frozen=True)
class ImportEstimate:
    """How long embedding a chat's passages will take, from the measured speed of its first batches."""

    passages: int
    seconds: float
    model_name: str

    def describe(self) -> str:
        return f"About {self.passages:,} passages to embed — {describe_duration(self.seconds)} with {self.model_name}."


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
    #: How long embedding was expected to take (measured on its first batches), if there was much to embed.
    estimate: ImportEstimate | None = None

    def describe(self) -> str:
        span = f"{self.first:%d %b %Y} to {self.last:%d %b %Y}" if self.first and self.last else ""
        if self.messages_added == 0 and self.windows_added:
            head = (f"Finished importing “{self.title}”: all {self.messages_in_file} messages were imported before, "
                    f"and its last {self.windows_added:,} passages are now searchable.")
        elif self.messages_added == 0:
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


def _data_version(conn: apsw.Connection) -> int:
    """Changes whenever another connection commits (this connection's own commits leave it alone)."""
    return conn.execute("PRAGMA data_version").fetchone()[0]


@dataclass
class _Plan:
    """What one import will write: which chat, which messages are new, the passages of the days they touch."""

    chat_id: int | None
    known: frozenset[str]
    fresh: list[tuple[str, Message]]
    affected_days: set[date]
    chunks: list[Chunk]
    windows: list[list[tuple[list[int], str]]]


def _match(conn: apsw.Connection, keys: list[str]) -> tuple[int | None, frozenset[str]]:
    chat_id = _find_same_chat(conn, keys)
    if chat_id is None:
        return None, frozenset()
    return chat_id, frozenset(row[0] for row in conn.execute(
        "SELECT message_key FROM messages WHERE chat_id = ?", (chat_id,)))


def _plan(conn: apsw.Connection, keys: list[str], messages: list[Message], embedder: TextEmbedder,
          config: ChunkingConfig, match: tuple[int | None, frozenset[str]]) -> _Plan:
    chat_id, known = match
    fresh = [(key, message) for key, message in zip(keys, messages) if key not in known]
    # New messages get provisional negative ids until the insert gives them real ones.
    provisional = {-1 - i: message for i, (_key, message) in enumerate(fresh)}
    affected_days = {message.timestamp.date() for _key, message in fresh}
    inputs = _existing_messages_on_days(conn, chat_id, affected_days) if chat_id is not None else []
    inputs += [item for pid, m in provisional.items()
               if (item := _chunkable(pid, m.timestamp, m.sender, m.text, m.kind))]
    inputs.sort(key=lambda item: (item.timestamp, item.id >= 0, abs(item.id)))
    chunks = chunk_messages(inputs, embedder.count_tokens, max_tokens=embedder.max_tokens, config=config)
    return _Plan(chat_id, known, fresh, affected_days, chunks, [chunk.search_units(config) for chunk in chunks])


def import_chat(conn: apsw.Connection, source: Path | ChatExport, embedder: TextEmbedder, *,
                progress: ImportProgress | None = None, cancel: Callable[[], bool] | None = None,
                config: ChunkingConfig = ChunkingConfig(), title: str | None = None,
                on_estimate: Callable[[ImportEstimate], None] | None = None) -> ImportSummary:
    """Import (or continue importing) one export; ``on_estimate`` hears how long embedding will take."""
    export = source if isinstance(source, ChatExport) else read_export(Path(source))
    parsed: ParsedChat = parse_chat_text(export.text)
    messages = parsed.messages
    if not messages:
        raise ChatFileError(f"No WhatsApp messages were found in {export.source.name}.",
                            hint="Choose the _chat.txt or the .zip WhatsApp made (More › Export chat).")
    if progress:
        progress("parsed", len(messages), len(messages))
    keys = message_keys(messages)
    # Passages are cut before the write lock is taken (it takes seconds for a large chat); under the
    # lock the plan is only checked, and made again if another import changed this chat meanwhile.
    version = _data_version(conn)
    plan = _plan(conn, keys, messages, embedder, config, _match(conn, keys))
    if cancel is not None and cancel():
        raise Cancelled("The import was cancelled; nothing was changed.")

    with atomic(conn):
        if _data_version(conn) != version:
            match = _match(conn, keys)
            if match != (plan.chat_id, plan.known):
                plan = _plan(conn, keys, messages, embedder, config, match)
        chat_id = plan.chat_id
        new_chat = chat_id is None
        table = vector_table_for(conn, embedder)
        if new_chat:
            conn.execute("INSERT INTO chats(title, source_path, date_order) VALUES (?, ?, ?)",
                         (title or export.title, to_db(export.source), parsed.date_order))
            chat_id = conn.last_insert_rowid()
        real_ids = _insert_messages(conn, chat_id, plan.fresh)
        _replace_chunks(conn, chat_id, plan.affected_days, plan.chunks, plan.windows, real_ids)
        conn.execute(
            "INSERT INTO chat_imports(chat_id, source_path, messages_in_file, messages_added, skipped_lines, "
            "attachments) VALUES (?, ?, ?, ?, ?, ?)",
            (chat_id, to_db(export.source), len(messages), len(plan.fresh), len(parsed.skipped_lines),
             len(parsed.attachments)))
    estimates: list[ImportEstimate] = []

    def estimated(estimate: ImportEstimate) -> None:
        estimates.append(estimate)
        if on_estimate:
            on_estimate(estimate)

    # Also the units an earlier, interrupted import of this chat left without vectors.
    embedded = _embed_missing(conn, embedder, table, chat_id, progress, cancel, estimated)
    if progress:
        progress("stored", len(plan.chunks), len(plan.chunks))
    chat_title = conn.execute("SELECT title FROM chats WHERE id = ?", (chat_id,)).fetchone()[0]
    stamps = [m.timestamp for m in messages if m.kind is not MessageKind.SYSTEM]
    return ImportSummary(
        chat_id=chat_id, title=chat_title, new_chat=new_chat, messages_in_file=len(messages),
        messages_added=len(plan.fresh), participants=parsed.participants, first=min(stamps) if stamps else None,
        last=max(stamps) if stamps else None,
        skipped_lines=len(parsed.skipped_lines), attachments=len(parsed.attachments),
        media_placeholders=sum(m.kind is MessageKind.MEDIA for m in messages),
        system_messages=sum(m.kind is MessageKind.SYSTEM for m in messages), passages_added=len(plan.chunks),
        windows_added=embedded, skipped_examples=parsed.skipped_lines[:5],
        estimate=estimates[0] if estimates else None,
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


def _replace_chunks(conn: apsw.Connection, chat_id: int, days: set[date], chunks: list[Chunk],
                    windows: list[list[tuple[list[int], str]]], real_ids: dict[int, int]) -> None:
    """The passages of ``days``, and their search units, in place of the old ones; vectors come later."""
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
    return conn.execute(f"SELECT count(*) FROM chunk_windows WHERE id NOT IN (SELECT rowid FROM {table.name})"
                        ).fetchone()[0]


_UNITS = ("SELECT w.id, c.chat_id, c.id, c.day, w.text FROM chunk_windows w JOIN chunks c ON c.id = w.chunk_id")


def _embed_missing(conn: apsw.Connection, embedder: TextEmbedder, table: VectorTable, chat_id: int | None,
                   progress: ImportProgress | None, cancel: Callable[[], bool] | None,
                   on_estimate: Callable[[ImportEstimate], None] | None = None) -> int:
    """Embed the units (of ``chat_id``, or all) lacking ``table``'s vectors, committing batch by batch."""
    rows = conn.execute(
        f"{_UNITS} WHERE w.id NOT IN (SELECT rowid FROM {table.name})"
        + (" AND c.chat_id = ?" if chat_id is not None else "") + " ORDER BY w.id",
        (chat_id,) if chat_id is not None else ()).fetchall()
    # A batch is padded to its longest text, so texts of similar length are embedded together (about 40%
    # less model time with MiniLM on the demo chat). The batches run in a shuffled order, so progress so
    # far predicts the time left (shortest first would not).
    order = sorted(range(len(rows)), key=lambda i: len(rows[i][4]))
    batches = [[rows[i] for i in order[start:start + EMBED_BATCH]] for start in range(0, len(rows), EMBED_BATCH)]
    batches = [batches[number] for number in np.random.default_rng(0).permutation(len(batches))]
    # Model time grows with a batch's size times its longest text: the measure of work for the estimate.
    work = [len(batch) * max(len(row[4]) for row in batch) for batch in batches]
    started, done = time.perf_counter(), 0
    for number, batch in enumerate(batches):
        if cancel is not None and cancel():
            kept = f"{done:,} of {len(rows):,} passages were embedded and are kept" if done else "no passages were embedded yet"
            raise Cancelled(f"The import was cancelled: the messages are saved, {kept}.",
                            hint="Import the same file again to finish.")
        vectors = embedder.embed_passages([row[4] for row in batch])
        _store_vectors(conn, table, embedder, batch, vectors)
        done += len(batch)
        if number + 1 == ESTIMATE_AFTER_BATCHES < len(batches) and on_estimate is not None:
            rate = (time.perf_counter() - started) / sum(work[:number + 1])
            on_estimate(ImportEstimate(len(rows), rate * sum(work), _model_name(embedder)))
        if progress and number + 1 >= min(ESTIMATE_AFTER_BATCHES, len(batches)):
            progress("embedded", done, len(rows))  # from the estimate on, so it is told before the bar starts
    return done


def _store_vectors(conn: apsw.Connection, table: VectorTable, embedder: TextEmbedder, batch: list[tuple],
                   vectors: np.ndarray) -> None:
    with atomic(conn):
        # Another import of this chat may have replaced some passages while these were embedded (their
        # units, and ids, gone or reused): only units still as they were get these vectors.
        ids = [row[0] for row in batch]
        current = set(conn.execute(f"{_UNITS} WHERE w.id IN ({','.join('?' * len(ids))})", ids))
        keep = [i for i, row in enumerate(batch) if tuple(row) in current]
        if keep:
            insert_vectors(conn, table, [batch[i][0] for i in keep], vectors[keep], model_key=embedder.model_key,
                           metadata={"chat_id": [batch[i][1] for i in keep], "chunk_id": [batch[i][2] for i in keep],
                                     "day": [batch[i][3] for i in keep]})


def _model_name(embedder: TextEmbedder) -> str:
    spec = getattr(embedder, "spec", None)
    return spec.name if spec is not None else embedder.model_key


def reindex(conn: apsw.Connection, embedder: TextEmbedder, *, progress: ImportProgress | None = None,
            cancel: Callable[[], bool] | None = None, on_estimate: Callable[[ImportEstimate], None] | None = None) -> int:
    """Embed every search window the current embedder's table lacks, batch by batch; returns how many."""
    return _embed_missing(conn, embedder, vector_table_for(conn, embedder), None, progress, cancel, on_estimate)
