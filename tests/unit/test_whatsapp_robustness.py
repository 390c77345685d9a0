"""The parser on damaged and hostile input: one flipped digit, long runs of spaces, big files."""

from __future__ import annotations

import time
from datetime import date, datetime
from pathlib import Path

import pytest

from gallery_app.core.chat.export_file import read_export
from gallery_app.core.chat.messages import MessageKind
from gallery_app.core.chat.whatsapp import parse_chat_text

DEMO_CHAT = Path(__file__).resolve().parents[2] / "resources" / "demo" / "chats" / "weekend_away" / "_chat.txt"


# --------------------------------------------------------------------------------------------
# One flipped digit must not flip the file
# --------------------------------------------------------------------------------------------


def _demo_with_one_line(old: str, new: str, *, first_match: int = 1) -> tuple[str, int]:
    text = read_export(DEMO_CHAT).text
    lines = text.split("\n")
    n = next(i for i, line in enumerate(lines) if i >= first_match and line.startswith(old))
    lines[n] = new + lines[n][len(old):]
    return "\n".join(lines), n + 1


@pytest.mark.parametrize("old, new", [
    ("[03/04/24", "[33/04/24"),  # a day no month has: only a two-digit *year* could be 33
    ("[12/04/24", "[12/34/24"),  # a month no year has
])
def test_one_flipped_digit_does_not_flip_the_demo_chat(old: str, new: str):
    original = parse_chat_text(read_export(DEMO_CHAT).text)
    text, flipped = _demo_with_one_line(old, new)
    chat = parse_chat_text(text)
    assert chat.date_order == original.date_order == "DMY"
    assert {m.timestamp.year for m in chat.messages} == {2024}
    # The damaged line is not a header: its text stays, as a line of the message above it.
    assert flipped not in [m.line for m in chat.messages]
    assert len(chat.messages) == len(original.messages) - 1
    above = max((m for m in chat.messages if m.line < flipped), key=lambda m: m.line)
    assert new in above.text
    kept = {m.line: m.timestamp for m in chat.messages}
    assert all(kept[m.line] == m.timestamp for m in original.messages if m.line in kept)


def test_a_flipped_digit_on_the_first_line_is_reported():
    text, flipped = _demo_with_one_line("[03/04/24", "[33/04/24", first_match=0)
    chat = parse_chat_text(text)
    assert flipped == 1 and chat.date_order == "DMY"
    assert [n for n, _ in chat.skipped_lines] == [1] and chat.skipped_lines[0][1].startswith("[33/04/24")
    assert {m.timestamp.year for m in chat.messages} == {2024}


def test_a_two_digit_year_file_is_still_read_year_first():
    # "24/04/03" is 3 April 2024, even where every field could also be a day or a month.
    chat = parse_chat_text("24/04/03, 10:00 - Ana: a\n24/04/05, 10:00 - Ana: b\n24/04/12, 10:00 - Ana: c\n"
                           "24/05/01, 10:00 - Ana: d")
    assert chat.date_order == "YMD"
    assert [m.timestamp.date() for m in chat.messages] == [date(2024, 4, 3), date(2024, 4, 5), date(2024, 4, 12),
                                                          date(2024, 5, 1)]


def test_a_single_line_still_decides_when_nothing_contradicts_it():
    chat = parse_chat_text("03/04/2019, 10:00 - Ana: a\n04/13/2019, 10:00 - Ana: b")
    assert chat.date_order == "MDY"


# --------------------------------------------------------------------------------------------
# Linear time on long runs of spaces
# --------------------------------------------------------------------------------------------


def _seconds(text: str) -> float:
    start = time.perf_counter()
    chat = parse_chat_text(text)
    elapsed = time.perf_counter() - start
    assert len(chat.messages) == 1 and chat.messages[0].sender == "Ana"
    return elapsed


@pytest.mark.parametrize("ending", [")", ">", " (file attached)", " <attached>", "<This message was edited>",
                                    " (", "<", "x"])
@pytest.mark.parametrize("header", ["13/06/2018, 21:25 - Ana: a", "[13/06/18, 21:25:15] Ana: \u200ea"])
def test_a_long_run_of_spaces_parses_in_linear_time(header: str, ending: str):
    small = min(_seconds(header + " " * 40_000 + ending) for _ in range(3))
    big = _seconds(header + " " * 5_000_000 + ending)
    assert small < 0.5  # was 7-14 s for 40,000 spaces before ")" or ">"
    assert big < 2.0    # a 5 MB line never ended
    assert big < 125 * max(small, 0.004) * 3  # 125 times the text: about 125 times the time, not 15,000


def test_a_long_message_with_an_attachment_marker_at_the_end():
    message = parse_chat_text("13/06/2018, 21:25 - Ana: " + "a " * 100_000 + "(file attached)").messages[0]
    assert message.attachment is None  # 200,000 characters are not a file name
    message = parse_chat_text("13/06/2018, 21:25 - Ana: ok" + " " * 100_000 + "<This message was edited>").messages[0]
    assert (message.text, message.edited) == ("ok", True)


def test_a_long_system_looking_line_is_fast():
    body = "\u200eAna hat " + "Bob und " * 600_000 + "Carl"
    start = time.perf_counter()
    chat = parse_chat_text(f"[13/06/18, 21:25:15] Group: {body}")
    assert time.perf_counter() - start < 2.0
    assert chat.messages[0].kind is MessageKind.TEXT


def test_many_direction_marks_in_a_header_are_fast():
    start = time.perf_counter()
    chat = parse_chat_text("\u200e" * 200_000 + "[13/06/18, 21:25:15] Ana: \u200ehi")
    assert time.perf_counter() - start < 2.0
    assert chat.messages[0].timestamp == datetime(2018, 6, 13, 21, 25, 15)


# --------------------------------------------------------------------------------------------
# Bounded memory
# --------------------------------------------------------------------------------------------


def test_parsing_holds_little_besides_the_text_and_the_messages():
    import tracemalloc
    from datetime import timedelta

    start = datetime(2019, 1, 1)
    text = "\n".join(f"{start + timedelta(minutes=7 * i):%d/%m/%y, %H:%M} - {('Ana', 'Bob')[i % 2]}: message {i} "
                     "with some words in it, and more words" + ("\nsecond line" if i % 5 == 0 else "")
                     for i in range(20_000))
    tracemalloc.start()
    try:
        chat = parse_chat_text(text)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(chat.messages) == 20_000
    # Working memory beyond the result: was 7.3 times the text (every line as a string, every
    # header's text twice), is 2.8 times (a few numbers per line and per header).
    assert peak - held < 4 * len(text)


def test_an_export_with_old_mac_line_ends_reads_as_the_same_messages(tmp_path):
    # The probe of issue 23 saw a CR-only export become one message; reading and parsing split lines on CR too.
    original = DEMO_CHAT.read_bytes()
    carriage_returns = tmp_path / "_chat.txt"
    carriage_returns.write_bytes(original.replace(b"\r\n", b"\n").replace(b"\n", b"\r"))
    assert b"\n" not in carriage_returns.read_bytes()
    expected = parse_chat_text(read_export(DEMO_CHAT).text).messages
    assert len(expected) == 432
    assert parse_chat_text(read_export(carriage_returns).text).messages == expected
