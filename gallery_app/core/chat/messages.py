"""What a parsed chat is made of: messages with a sender, a time, a kind and where they came from."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum


class MessageKind(str, Enum):
    TEXT = "text"
    SYSTEM = "system"    # encryption notice, joins/leaves, subject or icon changes, security codes
    MEDIA = "media"      # a placeholder for media that was not exported ("<Media omitted>", "image omitted")
    DELETED = "deleted"  # "This message was deleted" / "You deleted this message"


@dataclass(frozen=True, slots=True)  # slots: a big chat holds a million of these
class Message:
    #: Naive local time as the exporting phone wrote it.
    timestamp: datetime
    #: None for system messages.
    sender: str | None
    #: The text with the header removed; continuation lines joined with "\n"; direction marks removed.
    text: str
    kind: MessageKind
    #: 1-based number, in the chat file, of the line where this message's header is.
    line: int
    #: File name of an attachment that is part of the export ("<attached: NAME>", "NAME (file attached)").
    attachment: str | None = None
    #: The message carries WhatsApp's "<This message was edited>" marker (removed from ``text``).
    edited: bool = False
    #: For a message with an attachment: what the person wrote with it (the caption, on the marker's
    #: line or the lines after it; "" when nothing), without WhatsApp's marker or a document's title.
    #: None for messages without an attachment. ``text`` keeps the whole message as exported.
    caption: str | None = None


@dataclass
class ParsedChat:
    messages: list[Message] = field(default_factory=list)
    #: Lines (1-based number, text) before the first header that could not be understood: reported, not lost.
    skipped_lines: list[tuple[int, str]] = field(default_factory=list)
    #: "DMY", "MDY" or "YMD": the date order decided for the whole file.
    date_order: str = "DMY"
    #: Why that order, for a person ("\"13/9/20\" on line 4 is a date only read day first").
    date_order_reason: str = ""
    #: Headers (1-based line, the line, why) whose date is impossible in that order but possible in
    #: another: kept as text of the message above, as any non-header line, and reported, not swallowed.
    date_conflicts: list[tuple[int, str, str]] = field(default_factory=list)

    @property
    def attachments(self) -> list[str]:
        return [m.attachment for m in self.messages if m.attachment]
