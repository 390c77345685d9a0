"""Reading chats back out of the store: the list of chats, their messages and passages."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

import apsw

from gallery_app.core.chat.messages import MessageKind


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
        return f"{self.title} ({self.message_count} messages, {span}; {people})"


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


@dataclass(frozen=True)
class StoredChunk:
    id: int
    chat_id: int
    day: str
    message_ids: list[int]
    senders: list[str]
    text: str
    tokens: int


def _participants(conn: apsw.Connection, chat_id: int) -> list[str]:
    rows = conn.execute(
        "SELECT sender FROM messages WHERE chat_id = ? AND sender IS NOT NULL AND kind != 'system' "
        "GROUP BY sender ORDER BY min(id)", (chat_id,))
    return [row[0] for row in rows]


def list_chats(conn: apsw.Connection) -> list[ChatInfo]:
    rows = conn.execute(
        "SELECT c.id, c.title, count(m.id), min(m.ts), max(m.ts) FROM chats c "
        "LEFT JOIN messages m ON m.chat_id = c.id AND m.kind != 'system' GROUP BY c.id ORDER BY c.id"
    ).fetchall()
    return [
        ChatInfo(chat_id, title, _participants(conn, chat_id), count,
                 datetime.fromisoformat(first) if first else None, datetime.fromisoformat(last) if last else None)
        for chat_id, title, count, first, last in rows
    ]


def get_chat(conn: apsw.Connection, chat_id: int) -> ChatInfo | None:
    return next((chat for chat in list_chats(conn) if chat.id == chat_id), None)


def _message(row) -> StoredMessage:
    message_id, chat_id, ts, sender, text, kind, attachment, line = row
    return StoredMessage(message_id, chat_id, datetime.fromisoformat(ts), sender, text, MessageKind(kind),
                         attachment, line)


_MESSAGE_COLUMNS = "id, chat_id, ts, sender, text, kind, attachment, source_line"


def messages_by_id(conn: apsw.Connection, ids: list[int]) -> list[StoredMessage]:
    if not ids:
        return []
    placeholders = ",".join("?" * len(ids))
    rows = conn.execute(f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE id IN ({placeholders}) ORDER BY ts, id", ids)
    return [_message(row) for row in rows]


def chat_messages(conn: apsw.Connection, chat_id: int) -> list[StoredMessage]:
    rows = conn.execute(f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE chat_id = ? ORDER BY ts, id", (chat_id,))
    return [_message(row) for row in rows]


def chunks_by_id(conn: apsw.Connection, ids: list[int]) -> dict[int, StoredChunk]:
    if not ids:
        return {}
    placeholders = ",".join("?" * len(ids))
    rows = conn.execute(
        f"SELECT id, chat_id, day, message_ids, senders, text, tokens FROM chunks WHERE id IN ({placeholders})", ids)
    return {row[0]: StoredChunk(row[0], row[1], row[2], json.loads(row[3]), json.loads(row[4]), row[5], row[6])
            for row in rows}


def chat_titles(conn: apsw.Connection) -> dict[int, str]:
    return dict(conn.execute("SELECT id, title FROM chats"))
