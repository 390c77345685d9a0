"""What an answer rests on, shown so the person can check it: which lines of a passage answer (the
retriever's answering message, else the best-matching window's messages that say something), and the
closest message when there is no answer.

A passage's text is ``Name: text`` lines; which message a line came from is known only while
importing, so it is derived again here from the passage's stored messages: every line is the
start of what remains of its message's text (chunking splits a long message into several lines,
each keeping the sender), in passage order. A line no message claims (a date line) has no owner.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import apsw

from gallery_app.core.chat.chunking import carries_words
from gallery_app.core.chat.chunking import passage_lines as chunk_lines
from gallery_app.core.chat.grounding import content_words
from gallery_app.core.chat.repository import StoredMessage, messages_by_id
from gallery_app.core.chat.retrieval import Match

#: Characters of the closest message quoted in a decline; its whole text is in the chat viewer.
CLOSEST_CHARS = 200


@dataclass(frozen=True)
class PassageLine:
    text: str
    #: The message the line belongs to (None: a line of no message, such as a date line).
    message_id: int | None
    #: The line belongs to a message that answers (highlighted): see ``answering_ids``.
    focus: bool = False


def _squeeze(text: str) -> str:
    return " ".join(text.split())


def _quoted(text: str) -> str:
    """``text`` on one line, cut after ``CLOSEST_CHARS`` at a word."""
    text = _squeeze(text)
    if len(text) <= CLOSEST_CHARS:
        return text
    cut = text[:CLOSEST_CHARS].rsplit(" ", 1)[0] or text[:CLOSEST_CHARS]
    return cut.rstrip(",;:.") + "…"


def passage_lines(text: str, messages: Sequence[StoredMessage], focus_ids: Sequence[int] = ()) -> list[PassageLine]:
    """``text``'s lines, each with the message (of ``messages``, in passage order) it belongs to."""
    # A message's text as passages keep it (without its emoji grids), so each kept line starts what is left.
    remaining = [_squeeze(" ".join(line[len(m.sender) + 2 if m.sender else 0:]
                                   for line in chunk_lines(m.sender or "", m.text))) for m in messages]
    focus = set(focus_ids)
    result: list[PassageLine] = []
    current = 0
    for line in text.split("\n"):
        owner = _owner(line, messages, remaining, current)
        if owner is not None:
            sender = messages[owner].sender
            body = _squeeze(line[len(sender) + 2:] if sender else line)
            remaining[owner] = remaining[owner][len(body):].lstrip()
            current = owner
        message_id = messages[owner].id if owner is not None else None
        # A score or grid line of an answering message is not what answers ("Letterle 26/26" above a remark).
        answers = message_id in focus and carries_words(body if owner is not None else line)
        result.append(PassageLine(line, message_id, answers))
    if focus and not any(line.focus for line in result):
        # Game results only ("Woordle 234 2/6" and more scores): the one chosen is what the passage has to show.
        result = [replace(line, focus=line.message_id in focus) for line in result]
    return result


def _owner(line: str, messages: Sequence[StoredMessage], remaining: list[str], start: int) -> int | None:
    """The index of the first message from ``start`` on whose remaining text ``line`` starts.

    A line ends where its message's text has a space or ends ("ok" is not the start of "ok, see
    you"); only a word chunking had to cut in half ends elsewhere, so that is the fallback.
    """
    fallback = None
    for index in range(start, len(messages)):
        # A system line ("X changed the subject to …") has no sender and reads as it is.
        prefix = f"{messages[index].sender}: " if messages[index].sender else ""
        if not line.startswith(prefix):
            continue
        body = _squeeze(line[len(prefix):])
        if not body or not remaining[index].startswith(body):
            continue
        if remaining[index][len(body):len(body) + 1] in ("", " "):
            return index
        if fallback is None:
            fallback = index
    return fallback


def answering_ids(match: Match, messages: Sequence[StoredMessage]) -> list[int]:
    """The messages of ``match`` to highlight: the one the retriever chose as the answer, else those of the
    best window that say something. Game scores, emoji grids, reactions and placeholders never are while
    anything else could be; a passage of game results only highlights the one the retriever chose."""
    by_id = {m.id: m for m in messages}
    if match.answer_message_id in by_id and carries_words(by_id[match.answer_message_id].text):
        return [match.answer_message_id]
    saying = [i for i in match.focus_message_ids if i in by_id and carries_words(by_id[i].text)]
    return saying or ([match.answer_message_id] if match.answer_message_id in by_id else [])


def match_lines(conn: apsw.Connection, match: Match, text: str | None = None) -> list[PassageLine]:
    """The lines of ``text`` (default: the match's excerpt, else its passage) with owners, the answering
    message's lines marked (a note passage: its best lines, owned by no message)."""
    if match.note is not None:
        best = set(match.note.best_lines)
        return [PassageLine(line, None, n in best) for n, line in enumerate((text or match.text).split("\n"))]
    by_id = {m.id: m for m in messages_by_id(conn, list(match.message_ids))}
    ordered = [by_id[i] for i in match.message_ids if i in by_id]
    return passage_lines(match.excerpt or match.text if text is None else text, ordered,
                         answering_ids(match, ordered))


@dataclass(frozen=True)
class ClosestMessage:
    """The message that came closest to answering: said plainly when the answer is "I don't know"."""

    chat_id: int
    message_id: int
    sender: str
    timestamp: datetime
    text: str

    @property
    def heading(self) -> str:
        day = f"{self.timestamp:%d %b %Y}"
        return f"{self.sender}, {day}" if self.sender else day  # WhatsApp's own line has no sender

    @property
    def quote(self) -> str:
        return _quoted(self.text)

    def describe(self) -> str:
        return f"Closest message: {self.heading}: {self.quote}"


def closest_note_line(match: Match) -> str:
    """For a decline whose best passage is a note's: that passage's best line, with where it is."""
    if match.note is None:
        return ""
    lines = match.text.split("\n")
    best = next((lines[n] for n in match.note.best_lines if n < len(lines)), lines[0] if lines else "")
    return f"Closest note: {match.chat_title} ({match.day}): {_quoted(best)}"


def closest_message(conn: apsw.Connection, match: Match, question: str = "") -> ClosestMessage | None:
    """The message of ``match`` that answers: the retriever's choice (``Match.answer_message_id``), else of
    the best window's messages the one sharing most words with ``question``."""
    ids = [match.answer_message_id] if match.answer_message_id is not None else match.focus_message_ids
    candidates = messages_by_id(conn, list(ids or match.message_ids))
    candidates = [m for m in candidates if m.can_answer]
    if not candidates:
        return None
    asked = content_words(question)
    best = max(candidates, key=lambda m: len(asked & content_words(m.text)))  # max keeps the first of equals
    return ClosestMessage(best.chat_id, best.id, best.sender or "", best.timestamp, best.text)
