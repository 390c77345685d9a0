"""Where one conversation ends and the next begins in an export that is several chats pasted together.

People (and tools) join exports into one file: a helpdesk's hundreds of one-to-one chats, one after
another, each starting with its own "Messages … are end-to-end encrypted" line, and so not in date
order. Cut by day alone, one passage would mix four applicants' questions of the same afternoon and
lose which answer belongs to which question. A conversation starts at such a notice after the first
message, and wherever a message is older than one written before it by more than a change of time zone
could explain. Only messages people wrote count for that: Android writes "X joined using this group's
invite link" at the time the phone learnt of it, often hours out of order.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from datetime import timedelta

from gallery_app.core.chat.messages import Message, MessageKind
from gallery_app.core.chat.whatsapp import is_encryption_notice

#: Time running back by more than this is another chat: a flight across every time zone is 26 hours back.
BACKWARDS = timedelta(hours=26)


def conversation_starts(messages: Sequence[Message]) -> list[int]:
    """The file line of the first message of each conversation after the first (ascending)."""
    starts: list[int] = []
    latest = None
    for index, message in enumerate(messages):
        if message.kind is MessageKind.SYSTEM:
            if index > 0 and is_encryption_notice(message.text):
                starts.append(message.line)
                latest = None
            continue
        if latest is not None and message.timestamp < latest - BACKWARDS:
            starts.append(message.line)
            latest = message.timestamp
        else:
            latest = message.timestamp if latest is None else max(latest, message.timestamp)
    return starts


def conversation_of(line: int, starts: Sequence[int]) -> int:
    """The number (0 for the first) of the conversation the message on ``line`` belongs to."""
    return bisect_right(starts, line)
