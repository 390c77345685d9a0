"""Export layouts other parsers' test suites carry that we used to misread, one class per test.

The strings are our own, written after the layouts those projects document (WhatsApp on iOS and
Android in several languages, and browser/desktop exports): attachments with a caption, document
attachments, 12-hour clocks around midnight and noon, a sender followed by ":" with no space,
localised AM/PM markers before or after the time, and headers with and without seconds in one file.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from gallery_app.core.chat.messages import MessageKind
from gallery_app.core.chat.whatsapp import is_placeholder, parse_chat_text
from tests.chat_helpers import senders

LRM, NNBSP = "\u200e", "\u202f"


def one(text: str):
    chat = parse_chat_text(text)
    assert len(chat.messages) == 1, chat
    return chat.messages[0]


# --------------------------------------------------------------------------------------------
# Attachments with a caption, and documents
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("body, name, caption", [
    # Android: the caption on the line after the marker, or (some versions) after it on the same line
    ("IMG-20240403-WA0007.jpg (file attached)\nthe view from the hut", "IMG-20240403-WA0007.jpg",
     "the view from the hut"),
    ("IMG-20240403-WA0007.jpg (file attached) the view from the hut", "IMG-20240403-WA0007.jpg",
     "the view from the hut"),
    ("VID-20240403-WA0002.mp4 (Datei angehängt)\nschau mal\nzweite Zeile", "VID-20240403-WA0002.mp4",
     "schau mal\nzweite Zeile"),
    # iOS: the marker first, the caption after it
    (f"{LRM}<attached: 00000017-PHOTO-2024-04-03-18-22-05.jpg> the view from the hut",
     "00000017-PHOTO-2024-04-03-18-22-05.jpg", "the view from the hut"),
    (f"{LRM}<attached: 00000017-PHOTO-2024-04-03-18-22-05.jpg>\nthe view from the hut",
     "00000017-PHOTO-2024-04-03-18-22-05.jpg", "the view from the hut"),
    ("<adjunto: 00000003-PHOTO-2024-04-03-10-00-00.jpg> mirad", "00000003-PHOTO-2024-04-03-10-00-00.jpg", "mirad"),
    # no caption at all
    ("IMG-20240403-WA0007.jpg (file attached)", "IMG-20240403-WA0007.jpg", ""),
    (f"{LRM}<attached: 00000017-PHOTO-2024-04-03-18-22-05.jpg>", "00000017-PHOTO-2024-04-03-18-22-05.jpg", ""),
])
def test_an_attachment_keeps_its_name_and_its_caption(body: str, name: str, caption: str):
    for header in ("03/04/2024, 18:22 - Maya: ", "[03/04/24, 18:22:05] Maya: "):
        message = one(header + body)
        assert (message.attachment, message.caption, message.sender, message.kind) == (
            name, caption, "Maya", MessageKind.TEXT)
        assert message.text == body.replace(LRM, "")  # what the person reads is the line as exported


@pytest.mark.parametrize("body, name", [
    # iOS writes a document's title (and its page count) before the marker: that is not a caption
    (f"{LRM}Trip budget.pdf • {LRM}3 pages {LRM}<attached: 00000021-Trip budget.pdf>", "00000021-Trip budget.pdf"),
    (f"{LRM}Packing list.docx {LRM}<attached: 00000022-Packing list.docx>", "00000022-Packing list.docx"),
    (f"{LRM}notes.txt {LRM}<attached: 00000023-notes.txt>", "00000023-notes.txt"),
    ("<attached: 00000024-route_v2.gpx>", "00000024-route_v2.gpx"),
    # Android: any file, not only media, and the page count when it writes one
    ("Trip budget.pdf (file attached)", "Trip budget.pdf"),
    ("DOC-20240403-WA0003.docx (file attached)", "DOC-20240403-WA0003.docx"),
    ("notes.txt (file attached)", "notes.txt"),
    ("Trip budget.pdf • 3 pages (file attached)", "Trip budget.pdf"),
    ("contacts.vcf (fichier joint)", "contacts.vcf"),
])
def test_document_attachments(body: str, name: str):
    for header in ("03/04/2024, 18:22 - Maya: ", "[03/04/24, 18:22:05] Maya: "):
        message = one(header + body)
        assert (message.attachment, message.caption, message.kind) == (name, "", MessageKind.TEXT)
        assert is_placeholder(message.text)


def test_a_document_with_a_caption():
    message = one(f"[03/04/24, 18:22:05] Maya: {LRM}Trip budget.pdf • {LRM}3 pages "
                  f"{LRM}<attached: 00000021-Trip budget.pdf> please check the fuel line")
    assert (message.attachment, message.caption) == ("00000021-Trip budget.pdf", "please check the fuel line")
    assert not is_placeholder(message.text)


@pytest.mark.parametrize("body", [
    "see the photo (file attached) tomorrow, it is big",  # words before the marker are not a file name …
    "I wrote <attached: > by hand",
    "(file attached)",
    "x" * 300 + " (file attached)",  # … and nothing longer than a file name can be
])
def test_text_that_only_mentions_attachments_is_not_one(body: str):
    message = one(f"03/04/2024, 18:22 - Maya: {body}")
    assert (message.attachment, message.caption, message.text) == (None, None, body)


def test_plain_messages_have_no_caption():
    assert one("03/04/2024, 18:22 - Maya: hello").caption is None


# --------------------------------------------------------------------------------------------
# 12-hour clocks around midnight and noon
# --------------------------------------------------------------------------------------------


def test_android_twelve_hour_clock_across_midnight_and_noon():
    chat = parse_chat_text(
        "4/30/24, 11:58 PM - Maya: late\n"
        "5/1/24, 12:00 AM - Maya: midnight\n"
        "5/1/24, 12:59 AM - Maya: still night\n"
        "5/1/24, 1:00 AM - Maya: one\n"
        "5/1/24, 11:59 AM - Maya: almost noon\n"
        "5/1/24, 12:00 PM - Maya: noon\n"
        "5/1/24, 12:30 PM - Maya: lunch\n"
        "5/1/24, 1:05 PM - Maya: after lunch\n")
    assert [m.timestamp for m in chat.messages] == [
        datetime(2024, 4, 30, 23, 58), datetime(2024, 5, 1, 0, 0), datetime(2024, 5, 1, 0, 59),
        datetime(2024, 5, 1, 1, 0), datetime(2024, 5, 1, 11, 59), datetime(2024, 5, 1, 12, 0),
        datetime(2024, 5, 1, 12, 30), datetime(2024, 5, 1, 13, 5)]
    assert chat.date_order == "MDY"


@pytest.mark.parametrize("time_text, hour", [
    ("12:07 a. m.", 0), ("12:07 p. m.", 12), (f"12:07{NNBSP}AM", 0), (f"12:07{NNBSP}PM", 12),
    ("12:07 vorm.", 0), ("12:07 nachm.", 12), ("午前12:07", 0), ("午後12:07", 12), ("12:07 ص", 0),
    ("12:07 م", 12),
])
def test_twelve_o_clock_in_every_spelling(time_text: str, hour: int):
    assert one(f"03.04.24, {time_text} - Maya: x").timestamp == datetime(2024, 4, 3, hour, 7)


# --------------------------------------------------------------------------------------------
# A sender followed by ":" with no space
# --------------------------------------------------------------------------------------------


def test_a_known_sender_with_no_space_after_the_colon():
    chat = parse_chat_text("20/01/19, 11:22 - John Doe: first\n20/01/19, 11:23 - John Doe:.\n"
                           "20/01/19, 11:24 - Jane:ok?\n20/01/19, 11:25 - Jane: yes")
    assert [(m.sender, m.text, m.kind) for m in chat.messages] == [
        ("John Doe", "first", MessageKind.TEXT), ("John Doe", ".", MessageKind.TEXT),
        ("Jane", "ok?", MessageKind.TEXT), ("Jane", "yes", MessageKind.TEXT)]
    assert senders(chat) == ["John Doe", "Jane"]


def test_a_colon_without_space_after_an_unknown_name_is_not_a_sender():
    # Nobody called "Meeting moved to 10" wrote in this chat: a system line, as before.
    chat = parse_chat_text("20/01/19, 11:22 - John Doe: first\n20/01/19, 11:23 - Meeting moved to 10:30")
    assert (chat.messages[1].sender, chat.messages[1].kind) == (None, MessageKind.SYSTEM)


# --------------------------------------------------------------------------------------------
# Browser/desktop exports: dotted dates, localised AM/PM markers before or after the time
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("line, expected", [
    ("03.04.24, 9:05 nachm. - Maya: x", datetime(2024, 4, 3, 21, 5)),       # German
    ("03.04.24, 9:05 vorm. - Maya: x", datetime(2024, 4, 3, 9, 5)),
    ("[03.04.24, 9:05:10 nachm.] Maya: x", datetime(2024, 4, 3, 21, 5, 10)),
    ("03.04.2024, 9:05 p.m. - Maya: x", datetime(2024, 4, 3, 21, 5)),
    ("03.04.2024 9:05 du. - Maya: x", datetime(2024, 4, 3, 21, 5)),        # Hungarian, after …
    ("2024. 04. 03. du. 9:05 - Maya: x", datetime(2024, 4, 3, 21, 5)),      # … and before the time
    ("2024. 04. 03. de. 9:05 - Maya: x", datetime(2024, 4, 3, 9, 5)),
    ("03.04.24 9:05 odp. - Maya: x", datetime(2024, 4, 3, 21, 5)),          # Czech
    ("03.04.2024 klo 9.05 ip. - Maya: x", datetime(2024, 4, 3, 21, 5)),     # Finnish
    ("2024-04-03 9:05 em - Maya: x", datetime(2024, 4, 3, 21, 5)),          # Swedish
    ("03.04.2024 ÖS 9:05 - Maya: x", datetime(2024, 4, 3, 21, 5)),          # Turkish, before the time
    ("03.04.2024, 9:05 ÖÖ - Maya: x", datetime(2024, 4, 3, 9, 5)),
    ("03/04/2024, 9:05 午後 - Maya: x", datetime(2024, 4, 3, 21, 5)),       # CJK markers after the time too
    ("03/04/2024, 下午9:05 - Maya: x", datetime(2024, 4, 3, 21, 5)),
    ("2024. 4. 3. 오후 9:05 - Maya: x", datetime(2024, 4, 3, 21, 5)),
    ("03/04/2024, 9:05 م - Maya: x", datetime(2024, 4, 3, 21, 5)),           # Arabic, after …
    ("03/04/2024, م 9:05 - Maya: x", datetime(2024, 4, 3, 21, 5)),           # … and before
    ("03/04/2024, 9:05 μ.μ. - Maya: x", datetime(2024, 4, 3, 21, 5)),        # Greek
    ("03/04/2024, 9:05 אחה״צ - Maya: x", datetime(2024, 4, 3, 21, 5)),       # Hebrew
    ("03/04/2024, 9:05 หลังเที่ยง - Maya: x", datetime(2024, 4, 3, 21, 5)),    # Thai
    ("03/04/2024, 9:05 अपराह्न - Maya: x", datetime(2024, 4, 3, 21, 5)),       # Hindi
])
def test_localised_am_pm_markers_before_or_after_the_time(line: str, expected: datetime):
    message = one(line)
    assert (message.timestamp, message.sender, message.text) == (expected, "Maya", "x")


def test_a_sender_whose_name_starts_like_a_marker_keeps_it():
    message = one("03.04.2024, 21:05 - Emma: x")
    assert (message.sender, message.timestamp) == ("Emma", datetime(2024, 4, 3, 21, 5))
    message = one("[03.04.24, 21:05:10] em Bob: x")
    assert message.sender == "em Bob"


def test_thai_buddhist_era_years():
    assert one("28/2/2564 14:33 - สมชาย: สวัสดี").timestamp == datetime(2021, 2, 28, 14, 33)
    assert one("[01/03/2564, 9:05:00 หลังเที่ยง] สมชาย: ครับ").timestamp == datetime(2021, 3, 1, 21, 5)


# --------------------------------------------------------------------------------------------
# Headers with and without seconds in one file
# --------------------------------------------------------------------------------------------


def test_headers_with_and_without_seconds_in_one_file():
    chat = parse_chat_text(
        "[03.04.24, 18:22:05] Maya: with seconds\n"
        "[03.04.24, 18:23] Maya: without\n"
        "[03.04.24, 18:24] Lukas: no seconds\n"
        "[03.04.24, 18:25:59] Lukas: with again\n"
        "[13.04.24, 6:26 PM] Maya: twelve-hour, no seconds\n")
    assert [m.timestamp for m in chat.messages] == [
        datetime(2024, 4, 3, 18, 22, 5), datetime(2024, 4, 3, 18, 23), datetime(2024, 4, 3, 18, 24),
        datetime(2024, 4, 3, 18, 25, 59), datetime(2024, 4, 13, 18, 26)]
    assert [m.sender for m in chat.messages] == ["Maya", "Maya", "Lukas", "Lukas", "Maya"]


# --------------------------------------------------------------------------------------------
# A 12-hour marker after an hour already written on a 24-hour clock
# --------------------------------------------------------------------------------------------


def test_a_marker_after_a_24_hour_time_says_nothing():
    # Some Android versions write "PM" after 13–23 o'clock; the line used to become text of the
    # message above it, and so did every later one in that form.
    chat = parse_chat_text("1/29/18, 9:15 PM - Bob: before\n1/29/18, 23:59 PM - Bob: late one\n"
                           "1/30/18, 0:01 AM - Ann: just after midnight\n1/30/18, 13:05 PM - Ann: lunch\n")
    assert [(m.timestamp, m.sender, m.text) for m in chat.messages] == [
        (datetime(2018, 1, 29, 21, 15), "Bob", "before"), (datetime(2018, 1, 29, 23, 59), "Bob", "late one"),
        (datetime(2018, 1, 30, 0, 1), "Ann", "just after midnight"), (datetime(2018, 1, 30, 13, 5), "Ann", "lunch")]


def test_a_24_hour_time_then_a_name_that_starts_like_a_marker_keeps_the_name():
    chat = parse_chat_text("03.04.24, 21:25 - Maya: x\n03.04.24, 21:26 Am Wasser: y\n")
    assert chat.messages[0].sender == "Maya"
    assert parse_chat_text("[03.04.24, 21:25:00 PM] Maya: x").messages[0].timestamp == datetime(2024, 4, 3, 21, 25)


# --------------------------------------------------------------------------------------------
# Date, dash, time, semicolon (the layout R's rwhatsapp reads)
# --------------------------------------------------------------------------------------------


def test_date_dash_time_semicolon_layout():
    chat = parse_chat_text("12.07.2017 - 22:35:22; Ana: Hallo\n12.07.2017 - 22:36:01; Ben: Hi du\nzweite Zeile\n"
                           "13.07.2017 - 08:00:00; Ana: Morgen: 8 Uhr\n")
    assert [(m.timestamp, m.sender, m.text) for m in chat.messages] == [
        (datetime(2017, 7, 12, 22, 35, 22), "Ana", "Hallo"), (datetime(2017, 7, 12, 22, 36, 1), "Ben", "Hi du\nzweite Zeile"),
        (datetime(2017, 7, 13, 8, 0), "Ana", "Morgen: 8 Uhr")]
    assert chat.skipped_lines == []


# --------------------------------------------------------------------------------------------
# Day first or month first when no single date can tell: every header, then WhatsApp's own words
# --------------------------------------------------------------------------------------------

AMBIGUOUS = "12/9/20, 10:00 PM - Bob: hi\n12/9/20, 10:01 PM - Ann: {line}\n"


@pytest.mark.parametrize("line, order, because", [
    ("<Media omitted>", "MDY", 'English (WhatsApp\'s "<Media omitted>")'),
    ("This message was deleted", "MDY", "US English layout"),
    ("<Medien ausgeschlossen>", "DMY", "German"),
    ("<Multimedia omitido>", "DMY", "Spanish"),
    ("<Médias omis>", "DMY", "French"),
    ("Mensagem apagada", "DMY", "Portuguese"),
    ("<Media weggelaten>", "DMY", "Dutch"),
    ("Pesan ini telah dihapus", "DMY", "Indonesian"),
    ("see you", "DMY", "WhatsApp's own words are not in it"),
])
def test_an_undecided_file_goes_by_the_language_whatsapp_wrote_it_in(line: str, order: str, because: str):
    chat = parse_chat_text(AMBIGUOUS.format(line=line))
    assert chat.date_order == order
    assert because in chat.date_order_reason and "no date in the file tells day from month" in chat.date_order_reason


def test_the_encryption_notice_names_the_language_before_anything_a_person_typed():
    chat = parse_chat_text("12/9/20, 10:00 PM - Die Nachrichten und Anrufe sind Ende-zu-Ende-verschlüsselt.\n"
                           "12/9/20, 10:01 PM - Ann: <Media omitted> lol\n12/9/20, 10:02 PM - Bob: image omitted\n")
    assert chat.date_order == "DMY" and "German (its encryption notice" in chat.date_order_reason


def test_spanish_clock_words_rule_out_the_us_reading():
    chat = parse_chat_text("12/9/20, 10:00 p. m. - Bob: hola\n12/9/20, 10:01 p. m. - Ann: <Media omitted>\n")
    assert chat.date_order == "DMY" and '"p. m."' in chat.date_order_reason


@pytest.mark.parametrize("text, order, because", [
    ("13/9/20, 10:00 - Bob: hi\n1/10/20, 10:01 - Ann: ok\n", "DMY", '"13/9/20" on line 1 is a date only read day first'),
    ("9/1/20, 10:00 - Bob: hi\n9/13/20, 10:00 - Bob: later\n9/14/20, 10:00 - Bob: later\n", "MDY",
     '"9/13/20" on line 2 is a date only read month first'),
    ("1/2/20, 10:00 - Bob: a\n1/3/20, 10:00 - Bob: b\n1/4/20, 10:00 - Bob: c\n2/1/20, 10:00 - Bob: d\n"
     "2/2/20, 10:00 - Bob: e\n", "MDY", "in time order only read month first"),
])
def test_the_reason_for_the_order_names_its_evidence(text: str, order: str, because: str):
    chat = parse_chat_text(text)
    assert chat.date_order == order and because in chat.date_order_reason, chat.date_order_reason


def test_a_later_date_that_contradicts_the_choice_is_reported_not_swallowed():
    text = ("2/1/20, 10:00 - Bob: hi\n3/1/20, 10:01 - Ann: ok\n4/1/20, 10:01 - Ann: ok\n5/1/20, 10:01 - Ann: ok\n"
            "3/13/20, 10:00 - Bob: read month first only\n")
    chat = parse_chat_text(text)
    assert chat.date_order == "DMY"
    assert len(chat.messages) == 4 and chat.messages[-1].text.endswith("3/13/20, 10:00 - Bob: read month first only")
    assert chat.date_conflicts == [(5, "3/13/20, 10:00 - Bob: read month first only",
                                    "not a date read day first, as the file's other dates are; kept as text of the "
                                    "message above")]
    # A line in another layout (pasted from elsewhere) or an impossible date in every order is not a conflict.
    assert parse_chat_text("2/1/20, 10:00 - Bob: hi\n[31/31/20, 10:00:00] X: y\n").date_conflicts == []
