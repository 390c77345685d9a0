"""The WhatsApp parser against other projects' fixtures and the expectations taken from their tests.

The fixtures live in ../shared/fixtures (beside the checkout, as on CI). Each row of
whatsapp/expectations.json is its own test; `index` follows the source project's counting
(its `index_note` says when that is newest-first or skips system messages), and the message
text is compared the way each source project represents it (see `_peer_text`).
"""

from __future__ import annotations

import json
import re
from datetime import date, time

import pytest

from gallery_app.core.chat.export_file import read_export
from gallery_app.core.chat.messages import Message, MessageKind, ParsedChat
from gallery_app.core.chat.whatsapp import parse_chat_text
from tests.chat_helpers import senders
from tests.conftest import SHARED_FIXTURES

pytestmark = pytest.mark.shared_fixtures  # every test reads the other projects' exports

FIXTURES = SHARED_FIXTURES
WHATSAPP = FIXTURES / "whatsapp"
MISSING = (f"The shared test fixtures are missing: expected {WHATSAPP} "
           "(CI checks out shared/ beside the project; locally, put it at ../shared).")

DIRECTION_MARKS = re.compile("[\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]")

#: Rows where we believe the expectation is wrong, with the evidence (see the report in the PR).
XFAIL = {
    ("pustur_whatsapp-chat-parser/inline/index_chatExample.txt", 4):
        "expects 2017-04-09, a day-first reading that the peer's test never asserts (tests/index.test.ts checks "
        "only the count and the text). The file's dates 06/03/2017, 06/03/2017, 06/03/2017, 08/05/2017, "
        "09/04/2017 are in time order only month first (Jun 3 … Aug 5, Sep 4; day first goes back from "
        "8 May to 9 April), and the peer's own checkDecreasing also reads them month first.",
    ("pustur_whatsapp-chat-parser/historical_samples/short-chat.txt", 4):
        "same text as index_chatExample: '09/04/2017, 01:50 - +410123456789: How are you?' follows "
        "'08/05/2017, 01:48', so only the month-first reading (4 September) keeps the chat in order.",
}

#: Files whose stated count leaves out system lines (per message_counts.json's notes and sources).
COUNTS_WITHOUT_SYSTEM = {
    "chat-miner/test_[mmddyy]_24hrs.txt", "chat-miner/test_ddmmyy_24hrs.txt", "chat-miner/test_mmddyy_24hrs.txt",
    "chat-miner/test_mmddyyyy_12hrs.txt", "chat-miner/test_yyyymmdd_24hrs.txt",
    "Chatistics/_chat.txt", "Chatistics/_chat 3.txt",
    "chat-history-manager-rust/WhatsApp Chat with +123 45 6789.txt",  # encryption notice, "is a contact", timer
}


def _load(name: str) -> list[dict]:
    path = WHATSAPP / name
    return json.loads(path.read_text("utf-8")) if path.is_file() else []


def _row_id(row: dict) -> str:
    return f"{row['file']}#{row['index']}"


def _params(rows: list[dict]) -> list:
    params = []
    for row in rows:
        reason = XFAIL.get((row["file"], row["index"]))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(row, id=_row_id(row), marks=marks))
    return params


EXPECTATIONS = _load("expectations.json")
COUNTS = _load("message_counts.json")
_parsed: dict[str, ParsedChat] = {}


def parsed(file: str) -> ParsedChat:
    if file not in _parsed:
        path = WHATSAPP / file
        if not path.exists():
            pytest.fail(f"{MISSING} ({file} not found)")
        _parsed[file] = parse_chat_text(read_export(path).text)
    return _parsed[file]


def test_the_shared_fixtures_are_there():
    assert (WHATSAPP / "expectations.json").is_file(), MISSING
    assert (WHATSAPP / "message_counts.json").is_file(), MISSING
    assert len(EXPECTATIONS) > 100 and len(COUNTS) > 10


# --------------------------------------------------------------------------------------------
# How each source project counts and shows messages
# --------------------------------------------------------------------------------------------


def _select(chat: ParsedChat, row: dict) -> Message:
    note = row.get("index_note") or ""
    messages = chat.messages
    if "system" in note or "info entry" in note:
        messages = [m for m in messages if m.kind is not MessageKind.SYSTEM]
    if row["source"].startswith("joweich/chat-miner"):
        messages = [m for m in messages if not _no_space_after_sender(row["file"], m)]
    if "newest-first" in note:
        messages = messages[::-1]
    assert row["index"] < len(messages), f"only {len(messages)} messages counted the way {row['source']} does"
    return messages[row["index"]]


def _no_space_after_sender(file: str, message: Message) -> bool:
    """ "John Doe:." – chat-miner drops such a line ("self-destroying message", chatparsers.py)."""
    if message.sender is None:
        return False
    line = read_export(WHATSAPP / file).text.splitlines()[message.line - 1]
    return f"{message.sender}: " not in line and f"{message.sender}:" in line


def _peer_text(message: Message, row: dict) -> str:
    """Our message as the source project writes it (the differences are in its notes)."""
    text = message.text
    source = row["source"]
    if source.startswith("joweich/chat-miner"):
        text = text.replace("\n", " ")  # "multi-line message joined with a single space by the peer"
    if source.startswith(("skowalak/whatsapp-to-sqlite", "frozenspider/chat-history-manager-rust")):
        if message.attachment:
            text = message.caption  # these peers keep the attachment apart from the words sent with it
        elif message.kind is MessageKind.MEDIA:
            text = text.partition("\n")[2]  # … and leave a placeholder line out of the text
    return text


def _expected_text(row: dict) -> str:
    # Direction marks are not part of our text (messages.py); trailing line breaks are not part of a
    # message either (some peers keep the file's final "\n", their notes say so).
    return DIRECTION_MARKS.sub("", row["message"]).rstrip("\n")


def _expects_system(row: dict) -> bool | None:
    if row.get("kind") == "RoomE2EEnabledNotification":
        return True
    if row["author"] is None and row["message"] is not None:
        return True  # Pustur: author null with a message is a system message
    if row["author"] is not None:
        return False
    return None  # not asserted


@pytest.mark.parametrize("row", _params(EXPECTATIONS))
def test_expectation(row: dict):
    message = _select(parsed(row["file"]), row)
    if row["date"] is not None:
        assert message.timestamp.date() == date.fromisoformat(row["date"])
    if row["time"] is not None:
        assert message.timestamp.time() == time.fromisoformat(row["time"])
    system = _expects_system(row)
    if system is not None:
        assert (message.kind is MessageKind.SYSTEM) is system, message
        if system:
            assert message.sender is None
    if row["author"] is not None:
        assert message.sender == row["author"]
    if row["message"] is not None:
        assert _peer_text(message, row) == _expected_text(row)
    if "attachment_filename" in row:
        assert message.attachment == row["attachment_filename"]
    if row.get("file_lost"):
        assert message.kind is MessageKind.MEDIA
    if "attachment" in row:  # chat-history-manager: "photo NAME", or a note that the file is unavailable
        expected = row["attachment"]
        if expected is None:
            assert message.attachment is None and message.kind is MessageKind.TEXT
        elif "file unavailable" in expected:
            assert message.kind is MessageKind.MEDIA and message.attachment is None
        else:
            assert message.attachment == expected.split(" ", 1)[1]


@pytest.mark.parametrize("entry", [pytest.param(e, id=e["file"]) for e in COUNTS])
def test_message_count(entry: dict):
    messages = parsed(entry["file"]).messages
    if entry["file"] in COUNTS_WITHOUT_SYSTEM:
        messages = [m for m in messages if m.kind is not MessageKind.SYSTEM]
    if entry["file"].startswith("chat-miner/"):
        messages = [m for m in messages if not _no_space_after_sender(entry["file"], m)]
    assert len(messages) == entry["messages"], entry.get("note")


# --------------------------------------------------------------------------------------------
# Every fixture file
# --------------------------------------------------------------------------------------------

ALL_FILES = sorted(p.relative_to(WHATSAPP).as_posix() for p in WHATSAPP.rglob("*")
                   if p.is_file() and p.suffix.lower() in (".txt", ".zip")) if WHATSAPP.is_dir() else []


@pytest.mark.parametrize("file", ALL_FILES)
def test_no_fixture_file_crashes(file: str):
    export = read_export(WHATSAPP / file)
    chat = parse_chat_text(export.text)
    lines = [n for n, _ in chat.skipped_lines] + [m.line for m in chat.messages]
    assert lines == sorted(set(lines))
    assert chat.date_order in ("DMY", "MDY", "YMD")
    for message in chat.messages:
        assert (message.sender is None) == (message.kind is MessageKind.SYSTEM)
        assert "\u200e" not in message.text and "\r" not in message.text


def test_empty_file_has_no_messages():
    chat = parsed("pustur_whatsapp-chat-parser/historical_samples/empty.txt")
    assert chat.messages == [] and chat.skipped_lines == []
    assert parsed("whatsapp-to-sqlite/testsubdir/WhatsApp Chat with Andrew Ryan.txt").messages == []


def test_a_file_that_is_not_a_chat_has_its_lines_reported():
    chat = parsed("pustur_whatsapp-chat-parser/historical_samples/not-a-whatsapp-chat.txt")
    assert chat.messages == []
    assert chat.skipped_lines == [
        (1, "Sample User: This file has nothing to do with whatsapp"),
        (2, "TestBot: Yeah this is not the right format"),
        (3, "+410123456789: What happens..."),
        (4, "if this file gets parsed?"),
    ]


def test_the_example_zip_from_the_web_viewer():
    export = read_export(WHATSAPP / "pustur_whatsapp-chat-parser-website/whatsapp-chat-parser-example.zip")
    chat = parse_chat_text(export.text)
    assert len(chat.messages) == 52  # one per header line
    assert chat.date_order == "DMY"
    assert [m.kind for m in chat.messages[:4]] == [MessageKind.SYSTEM] * 4  # notice, created group, added ×2
    assert senders(chat) == ["John", "Loris", "Emily"]
    assert chat.attachments == [a for a in export.attachments if not a.endswith("example.zip")] + \
        ["00000004-whatsapp-chat-parser-example.zip"]
    poll = next(m for m in chat.messages if m.text.startswith("POLL:"))
    assert poll.text.count("\n") == 6 and poll.text.endswith("OPTION: Saturday 17 evening (3 votes)")
    assert chat.messages[-1].text.endswith("- https://github.com/Pustur/whatsapp-chat-parser-website")


def test_german_group_export():
    chat = parsed("whatsapp-to-sqlite/WhatsApp Chat mit Die üblichen Verdächtigen.txt")
    by_line = {m.line: m for m in chat.messages}
    for line in (1, 17):  # "… hat die Gruppe … erstellt.", "… hat … entfernt."
        assert by_line[line].kind is MessageKind.SYSTEM
    system = [m.text for m in chat.messages if m.kind is MessageKind.SYSTEM]
    assert any(t.endswith("hinzugefügt.") for t in system) and any(t.endswith("verlassen.") for t in system)
    assert any(m.kind is MessageKind.MEDIA and m.text == "<Medien ausgeschlossen>" for m in chat.messages)
    sketch = by_line[19]
    assert sketch.attachment == "Aschenputtelsketch.docx-1.docx"
    assert sketch.text == "Aschenputtelsketch.docx-1.docx (Datei angehängt)\nAschenputtelsketch.docx"
    assert all(m.sender != "Carlos Matos hat die Gruppe" for m in chat.messages)


def test_german_one_to_one_export():
    chat = parsed("whatsapp-to-sqlite/testsubdir/WhatsApp Chat mit Jane Doe.txt")
    assert [m.kind for m in chat.messages].count(MessageKind.SYSTEM) == 1
    assert senders(chat) == ["Jane Doe", "John Doe"]
    video = next(m for m in chat.messages if m.attachment == "VID-20181031-WA0007.mp4")
    assert video.text.endswith("\nDas hier meine ich")
    assert [m.attachment for m in chat.messages if m.attachment] == ["VID-20181031-WA0007.mp4", "Max Caulfield.vcf"]
