"""The WhatsApp chat parser, feature by feature, on small inline exports; plus property tests."""

from __future__ import annotations

import re
from datetime import date, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gallery_app.core.chat.messages import MessageKind, ParsedChat
from gallery_app.core.chat.whatsapp import is_placeholder, names_the_group, parse_chat_text
from tests.chat_helpers import senders

LRM, RLM, NBSP, NNBSP, BOM = "\u200e", "\u200f", "\u00a0", "\u202f", "\ufeff"


def one(text: str):
    chat = parse_chat_text(text)
    assert len(chat.messages) == 1, chat
    return chat.messages[0]


def stamps(text: str, **kwargs) -> list[datetime]:
    return [m.timestamp for m in parse_chat_text(text, **kwargs).messages]


# --------------------------------------------------------------------------------------------
# Header layouts
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("line, expected", [
    ("[13/06/18, 21:25:15] Ana: hi", datetime(2018, 6, 13, 21, 25, 15)),           # iOS
    ("13/6/2018, 21:25 - Ana: hi", datetime(2018, 6, 13, 21, 25)),                  # Android
    ("7/13/16, 4:56:55 PM: Ana: hi", datetime(2016, 7, 13, 16, 56, 55)),            # old iOS, ":" after the time
    ("2019/01/13, 11:25 - Ana: hi", datetime(2019, 1, 13, 11, 25)),                 # year first
    ("[2018/06/13, 21:25:15] Ana: hi", datetime(2018, 6, 13, 21, 25, 15)),
    ("[06/2018/13, 21:25:15] Ana: hi", datetime(2018, 6, 13, 21, 25, 15)),          # year in the middle
    ("13.06.18, 21:25 - Ana: hi", datetime(2018, 6, 13, 21, 25)),                   # dots
    ("13-06-2018, 01.55 PM - Ana: hi", datetime(2018, 6, 13, 13, 55)),              # dashes, dotted time
    ("13. 6. 2018. 21:25:15 Ana: hi", datetime(2018, 6, 13, 21, 25, 15)),           # "13. 6. 2018." and no separator
    ("13.06.18 21.25.15: Ana: hi", datetime(2018, 6, 13, 21, 25, 15)),              # no comma, ":" after the time
    ("13.6.2018 klo 21.25.15 - Ana: hi", datetime(2018, 6, 13, 21, 25, 15)),        # Finnish "klo"
    ("13/06/2018 à 21:25 - Ana: hi", datetime(2018, 6, 13, 21, 25)),                # French "à"
    ("30/12/2020 13:00 - Ana: hi", datetime(2020, 12, 30, 13, 0)),                  # no comma
    ("09/17/19, 8:30:52 AM \u2013 Ana: hi", datetime(2019, 9, 17, 8, 30, 52)),      # EN DASH
    ("21:25, 13/06/2018 - Ana: hi", datetime(2018, 6, 13, 21, 25)),                 # time first
    ("[21:25:15, 13.06.18] Ana: hi", datetime(2018, 6, 13, 21, 25, 15)),            # time first, iOS
])
def test_header_layouts(line: str, expected: datetime):
    message = one(line)
    assert (message.timestamp, message.sender, message.text) == (expected, "Ana", "hi")


@pytest.mark.parametrize("time_text, hour, minute", [
    ("1:55 PM", 13, 55), ("1:55 pm", 13, 55), ("1:55 p.m.", 13, 55), ("1:55 p. m.", 13, 55),
    ("1:55 P.M.", 13, 55), (f"1:55{NNBSP}PM", 13, 55), (f"1:55{NBSP}pm", 13, 55), (f"1:55 p.{NBSP}m.", 13, 55),
    (f"1:55{NNBSP}p.{NNBSP}m.", 13, 55), ("1:55 a. m.", 1, 55), ("1:55PM", 13, 55),
    ("12:05 AM", 0, 5), ("12:05 PM", 12, 5), ("00:08 a. m.", 0, 8), ("11:59 PM", 23, 59),
])
def test_twelve_hour_clocks(time_text: str, hour: int, minute: int):
    message = one(f"[13/06/18, {time_text}] Ana: hi")
    assert (message.timestamp.hour, message.timestamp.minute) == (hour, minute)
    assert message.text == "hi"


def test_arabic_header_with_arabic_indic_digits_and_marker():
    # Android in Arabic: Arabic-Indic digits, RLMs around the slashes, Arabic comma, ص / م after the time.
    pm = one(f"١٣{RLM}/٦{RLM}/٢٠١٨، ٩:٢٥ م - أحمد: مرحبا")
    assert (pm.timestamp, pm.sender, pm.text) == (datetime(2018, 6, 13, 21, 25), "أحمد", "مرحبا")
    am = one("١٣/٠٦/١٨، ٩:٢٥ ص - أحمد: مرحبا")
    assert am.timestamp == datetime(2018, 6, 13, 9, 25)


def test_extended_arabic_indic_digits():
    message = one("[۱۳/۰۶/۲۰۱۸, ۲۱:۲۵:۱۵] Sara: salam")
    assert message.timestamp == datetime(2018, 6, 13, 21, 25, 15)


def test_chinese_markers_come_before_the_time():
    assert one("[2018/6/13 下午9:25:15] 小明: 你好").timestamp == datetime(2018, 6, 13, 21, 25, 15)
    assert one("2018/6/14 上午12:05 - 小明: 早").timestamp == datetime(2018, 6, 14, 0, 5)
    assert one("2018/6/14 上午9:05 - 小明: 早").timestamp == datetime(2018, 6, 14, 9, 5)


def test_korean_markers_come_before_the_time():
    assert one("2018. 6. 13. 오후 9:25 - 민수: 안녕").timestamp == datetime(2018, 6, 13, 21, 25)
    assert one("[2018. 6. 13. 오전 12:30:00] 민수: 안녕").timestamp == datetime(2018, 6, 13, 0, 30)


@pytest.mark.parametrize("mark", [LRM, RLM, "\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067",
                                  "\u2068", "\u2069", BOM])
def test_invisible_marks_anywhere_in_a_header_are_ignored(mark: str):
    line = f"{mark}[{mark}13/06{mark}/18,{mark} 21:{mark}25:15{mark}] {mark}Ana{mark}: {mark}hi"
    message = one(line)
    assert (message.timestamp, message.sender, message.text) == (datetime(2018, 6, 13, 21, 25, 15), "Ana", "hi")


def test_bom_in_the_middle_of_a_header_and_at_the_start_of_the_file():
    chat = parse_chat_text(f"{BOM}13/06/2018, 21:25 - Ana: hi\n14/06/2018,{BOM} 08:00 - Bob: {LRM}hey")
    assert [(m.sender, m.text) for m in chat.messages] == [("Ana", "hi"), ("Bob", "hey")]


def test_direction_marks_are_removed_from_message_text():
    message = one(f"[13/06/18, 21:25:15] Ana: {LRM}hello{RLM} world\n{LRM}second line")
    assert message.text == "hello world\nsecond line"


# --------------------------------------------------------------------------------------------
# Lines, line numbers, continuation, skipped lines
# --------------------------------------------------------------------------------------------


def test_multi_line_messages_and_line_numbers():
    chat = parse_chat_text("13/06/2018, 21:25 - Ana: one\ntwo\n\nthree\n14/06/2018, 08:00 - Bob: four\n")
    assert [(m.line, m.text) for m in chat.messages] == [(1, "one\ntwo\n\nthree"), (5, "four")]


def test_crlf_file_with_lf_inside_a_message():
    text = "[13/06/18, 21:25:15] Ana: poll:\nOPTION: a\nOPTION: b\r\n[13/06/18, 21:26:00] Bob: ok\r\n"
    chat = parse_chat_text(text)
    assert [(m.line, m.text) for m in chat.messages] == [(1, "poll:\nOPTION: a\nOPTION: b"), (4, "ok")]


def test_lone_cr_ends_a_line():
    chat = parse_chat_text("13/06/2018, 21:25 - Ana: one\rtwo\r13/06/2018, 21:26 - Bob: three")
    assert [(m.line, m.text) for m in chat.messages] == [(1, "one\ntwo"), (3, "three")]


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1c", "\x1e"])
def test_unicode_line_separators_are_ordinary_characters(char: str):
    chat = parse_chat_text(f"13/06/2018, 21:25 - Ana: one{char}two\n13/06/2018, 21:26 - Bob: three")
    assert [(m.line, m.text) for m in chat.messages] == [(1, f"one{char}two"), (2, "three")]


def test_lines_before_the_first_header_are_reported_not_dropped():
    chat = parse_chat_text("Chat export\n\n  \nsomething else\n13/06/2018, 21:25 - Ana: hi\n")
    assert chat.skipped_lines == [(1, "Chat export"), (4, "something else")]
    assert chat.messages[0].line == 5


def test_a_header_like_line_with_an_impossible_date_continues_the_message():
    chat = parse_chat_text("13/06/2018, 21:25 - Ana: one\n"
                           "06/13/2018, 21:26 - Ana: month 13 in a day-first file\n"
                           "14/06/2018, 25:00 - Ana: hour 25\n"
                           "14/06/2018, 10:61 - Ana: minute 61\n"
                           "31/02/2018, 10:00 - Ana: 31 February\n"
                           "15/06/2018, 08:00 - Bob: two")
    assert [m.line for m in chat.messages] == [1, 6]
    assert chat.messages[0].text.count("\n") == 4


def test_a_datetime_alone_on_a_line_is_text():
    message = one("23/06/2018, 01:55 p.m. - Loris: one\ntwo\n2016-04-29 10:30:00")
    assert message.text == "one\ntwo\n2016-04-29 10:30:00"


def test_trailing_blank_lines_are_not_part_of_a_message():
    chat = parse_chat_text("13/06/2018, 21:25 - Ana: one\n\n\n13/06/2018, 21:26 - Bob: two\n\n")
    assert [m.text for m in chat.messages] == ["one", "two"]


def test_a_line_pasted_from_another_chat_stays_in_its_message():
    # A different date style that would go back in time, or a layout without brackets in an iOS chat.
    chat = parse_chat_text("[17.9.2019, 16:37:47] Ana: first\n"
                           "[1.9.19, 00:00:00] Ana: quoted from another chat\n"
                           "[17.9.2019, 16:38:06] Ana: second\n"
                           "2/11/19, 14:48 Bob: pasted from an Android chat\n"
                           "[17.09.2019, 16:39:52] Bob: third\n")
    assert [m.line for m in chat.messages] == [1, 3, 5]
    assert chat.messages[1].text == "second\n2/11/19, 14:48 Bob: pasted from an Android chat"


def test_date_style_switching_mid_file_keeps_every_message():
    chat = parse_chat_text("6/30/23, 16:13 - Ana: one\n"
                           "6/30/23, 16:14 - Ana: two\n"
                           "1/7/2023, 09:15 - Ana: three\n"
                           "30/7/2023, 09:16 - Ana: four\n")
    assert [m.timestamp for m in chat.messages] == [
        datetime(2023, 6, 30, 16, 13), datetime(2023, 6, 30, 16, 14),
        datetime(2023, 7, 1, 9, 15), datetime(2023, 7, 30, 9, 16)]


# --------------------------------------------------------------------------------------------
# Day first or month first
# --------------------------------------------------------------------------------------------


def test_a_first_field_above_12_means_day_first():
    chat = parse_chat_text("03/04/2019, 10:00 - Ana: a\n13/04/2019, 10:00 - Ana: b")
    assert chat.date_order == "DMY"
    assert chat.messages[0].timestamp == datetime(2019, 4, 3, 10, 0)


def test_a_second_field_above_12_means_month_first():
    chat = parse_chat_text("03/04/2019, 10:00 - Ana: a\n04/13/2019, 10:00 - Ana: b")
    assert chat.date_order == "MDY"
    assert chat.messages[0].timestamp == datetime(2019, 3, 4, 10, 0)


def test_only_the_last_line_disambiguates():
    # Dates that read the same either way ("02/02/19"), then one that only one order can read.
    lines = [f"0{d}/0{d}/19, 10:0{h} - Ana: x" for d in (1, 2, 3) for h in (1, 2, 3)]
    day_first = parse_chat_text("\n".join([*lines, "28/03/19, 11:00 - Ana: last"]))
    month_first = parse_chat_text("\n".join([*lines, "03/28/19, 11:00 - Ana: last"]))
    assert (day_first.date_order, month_first.date_order) == ("DMY", "MDY")
    assert day_first.messages[-1].timestamp.date() == month_first.messages[-1].timestamp.date() == date(2019, 3, 28)


def test_a_single_date_does_not_outweigh_the_time_order():
    # Nine dates in time order only day first (1 Jan, 2 Jan, 3 Jan, 1 Feb …), then one that only
    # month first can read: that one is a stray line, kept as text of the message above it.
    lines = [f"0{d}/0{m}/19, 10:0{d} - Ana: x" for m in (1, 2, 3) for d in (1, 2, 3)]
    chat = parse_chat_text("\n".join([*lines, "03/28/19, 11:00 - Ana: last"]))
    assert chat.date_order == "DMY"
    assert chat.messages[1].timestamp.date() == date(2019, 1, 2)
    assert len(chat.messages) == 9 and chat.messages[-1].text == "x\n03/28/19, 11:00 - Ana: last"


def test_the_order_of_consecutive_dates_decides_when_the_numbers_cannot():
    # Day first: 1 Feb, 5 Feb, 1 Mar, 2 Mar, 3 Mar – in order. Month first would jump around.
    chat = parse_chat_text("01/02/19, 10:00 - A: x\n05/02/19, 10:00 - A: x\n01/03/19, 10:00 - A: x\n"
                           "02/03/19, 10:00 - A: x\n03/03/19, 10:00 - A: x")
    assert chat.date_order == "DMY"
    chat = parse_chat_text("02/01/19, 10:00 - A: x\n02/05/19, 10:00 - A: x\n03/01/19, 10:00 - A: x\n"
                           "03/02/19, 10:00 - A: x\n03/03/19, 10:00 - A: x")
    assert chat.date_order == "MDY"


def test_one_stray_line_does_not_flip_the_file():
    chat = parse_chat_text("13/04/2019, 10:00 - Ana: a\n14/04/2019, 10:00 - Ana: b\n"
                           "04/15/2019, 10:00 - Ana: c\n16/04/2019, 10:00 - Ana: d")
    assert chat.date_order == "DMY"
    assert [m.line for m in chat.messages] == [1, 2, 4]  # the month-first line is not a header here


def test_default_is_day_first_when_nothing_tells():
    assert parse_chat_text("03/04/2019, 10:00 - Ana: a").date_order == "DMY"
    assert one("3/6/18, 1:55 p.m. - a: m").timestamp == datetime(2018, 6, 3, 13, 55)


def test_english_export_with_us_shaped_dates_is_month_first_when_nothing_else_tells():
    # "2/11/19" (unpadded, two-digit year) with English WhatsApp wording: the en_US shape.
    chat = parse_chat_text("2/11/19, 14:18 - Messages and calls are end-to-end encrypted. Tap to learn more.\n"
                           "2/11/19, 14:20 - Ana: hi\n")
    assert chat.date_order == "MDY"
    assert chat.messages[1].timestamp == datetime(2019, 2, 11, 14, 20)
    spanish = parse_chat_text("2/11/19, 14:18 - Los mensajes y las llamadas están cifrados de extremo a extremo.\n"
                              "2/11/19, 14:20 - Ana: hola\n")
    assert spanish.date_order == "DMY"


def test_old_android_without_year_takes_the_year_from_neighbours():
    chat = parse_chat_text("29/12/2019, 10:00 - Ana: a\n30/12/2019, 10:00 - Ana: b\n"
                           "31/12, 11:00 - Ana: c\n1/1, 09:00 - Ana: d\n")
    assert [m.timestamp for m in chat.messages] == [
        datetime(2019, 12, 29, 10), datetime(2019, 12, 30, 10), datetime(2019, 12, 31, 11), datetime(2020, 1, 1, 9)]


def test_old_android_without_year_before_the_first_dated_header():
    chat = parse_chat_text("12/30, 10:00 - Ana: a\n12/31, 10:00 - Ana: b\n1/1/2020, 10:00 - Ana: c\n")
    assert [m.timestamp for m in chat.messages] == [
        datetime(2019, 12, 30, 10), datetime(2019, 12, 31, 10), datetime(2020, 1, 1, 10)]


def test_old_android_without_any_year_ends_within_the_last_year():
    text = "12/30, 10:00 - Ana: a\n12/31, 23:59 - Ana: b\n1/1, 00:01 - Ana: c\n2/20, 08:00 - Ana: d\n"
    assert stamps(text, today=date(2024, 3, 1)) == [
        datetime(2023, 12, 30, 10), datetime(2023, 12, 31, 23, 59), datetime(2024, 1, 1, 0, 1),
        datetime(2024, 2, 20, 8)]
    # The last message's day is still to come this year: it was last year.
    assert stamps(text, today=date(2024, 2, 1))[-1] == datetime(2023, 2, 20, 8)
    assert parse_chat_text(text).date_order == "MDY"


# --------------------------------------------------------------------------------------------
# Senders and system messages
# --------------------------------------------------------------------------------------------


def test_sender_and_text():
    message = one("[13/06/18, 21:25:15] Very long name with 🙈 emoji: Does it work with colons?: yes")
    assert (message.sender, message.text, message.kind) == (
        "Very long name with 🙈 emoji", "Does it work with colons?: yes", MessageKind.TEXT)


def test_empty_message_is_not_a_system_message():
    message = one("03/02/17, 18:42 - Luke: ")
    assert (message.sender, message.text, message.kind) == ("Luke", "", MessageKind.TEXT)
    message = one("03/02/17, 18:42 - Luke:\nnext line")
    assert (message.sender, message.text) == ("Luke", "\nnext line")


@pytest.mark.parametrize("rest", [
    "You created group \"Trip\"", "Ana added Bob", "Ana left", "John:.", "+49 170 1234567 is a contact",
    "Messages and calls are end-to-end encrypted. No one outside of this chat, not even WhatsApp, can read them.",
])
def test_a_line_without_a_sender_is_a_system_message(rest: str):
    message = one(f"13/06/2018, 21:25 - {rest}")
    assert (message.sender, message.kind, message.text) == (None, MessageKind.SYSTEM, rest)


@pytest.mark.parametrize("body", [
    "Messages and calls are end-to-end encrypted. No one outside of this chat, not even WhatsApp, can read them.",
    "Messages to this group are now secured with end-to-end encryption. Tap for more info.",
    "Messages you send to this chat and calls are now secured with end-to-end encryption.",
    "Nachrichten und Anrufe sind Ende-zu-Ende-verschlüsselt. Niemand außerhalb dieses Chats kann sie lesen.",
    "Nachrichten, die du in diesem Chat sendest, sowie Anrufe, sind jetzt mit Ende-zu-Ende-Verschlüsselung "
    "geschützt. Tippe für mehr Infos.",
    "Los mensajes y las llamadas están cifrados de extremo a extremo. Nadie fuera de este chat puede leerlos.",
    "Les messages et les appels sont chiffrés de bout en bout. Personne en dehors de cette discussion ne peut "
    "les lire.",
    "As mensagens e as chamadas são protegidas com a criptografia de ponta a ponta.",
    "I messaggi e le chiamate sono crittografati end-to-end.",
    "Berichten en gesprekken worden end-to-end versleuteld.",
    "Pesan dan panggilan terenkripsi secara end-to-end. Tidak seorang pun di luar chat ini yang dapat membaca atau "
    "mendengarkannya, bahkan WhatsApp. Ketuk untuk info selengkapnya.",
])
def test_encryption_notices_are_system_even_with_an_author(body: str):
    for line in (f"[03/04/24, 19:40:12] Maya: {LRM}{body}", f"03/04/2024, 19:40 - Maya: {body}",
                 f"03/04/2024, 19:40 - {body}"):
        message = one(line)
        assert (message.sender, message.kind, message.text) == (None, MessageKind.SYSTEM, body)


@pytest.mark.parametrize("body", [
    "Ana added Tomás", "Ana removed Tomás", "Ana left", "You created group “Lisbon trip”", "You were added",
    "Ana changed the subject from “Lisbon” to “Lisbon trip”", "Ana changed this group's icon",
    "Ana changed the group description", "Your security code with Ana changed. Tap to learn more.",
    "Tomás joined using this group's invite link",
    "Carlos Matos hat die Gruppe „Die Üblichen“ erstellt.", "Basil El hat Philip Cimiano hinzugefügt.",
    "Du hast A-aron hinzugefügt.", "Bea hat dich entfernt.", "Los Santos Customs hat die Gruppe verlassen.",
    "Ana añadió a Tomás", "Ana salió del grupo", "Ana cambió el asunto de “A” a “B”",
    "Ana a ajouté Tomás", "Ana est partie", "Ana a changé le sujet de « A » en « B »",
    "Ana adicionou Tomás", "Ana saiu", "Ana mudou o assunto de “A” para “B”",
    "Ana ha aggiunto Tomás", "Ana è uscita", "Ana heeft Tomás toegevoegd", "Ana is vertrokken",
])
def test_ios_group_events_carry_the_group_name_as_author(body: str):
    message = one(f"[13/06/18, 21:25:15] Lisbon trip: {LRM}{body}")
    assert (message.sender, message.kind, message.text) == (None, MessageKind.SYSTEM, body)


def test_android_event_with_the_person_as_author():
    message = one("30/6/2023, 16:15 - +123 45 6789: +123 45 6789 updated the message timer. New messages will "
                  "disappear from this chat 24 hours after they're sent.")
    assert (message.sender, message.kind) == (None, MessageKind.SYSTEM)


def test_a_group_subject_with_a_colon_is_still_a_system_message():
    message = one('13/06/2018, 21:25 - Ana changed the subject from "Trip" to "Trip: day 1"')
    assert (message.sender, message.kind) == (None, MessageKind.SYSTEM)
    message = one('13/06/2018, 21:25 - Ana created group "Plans: summer"')
    assert (message.sender, message.kind) == (None, MessageKind.SYSTEM)


@pytest.mark.parametrize(("line", "names_it"), [
    ('13/06/2018, 21:25 - Ana created group "Plans: summer"', True),
    ("13/06/2018, 21:25 - Ana changed the subject from “Trip” to “Trip: day 1”", True),
    ("13/06/2018, 21:25 - Ana hat die Gruppe „Ausflug“ erstellt", True),
    ("13/06/2018, 21:25 - Ana a créé le groupe « Vacances »", True),
    ('13/06/2018, 21:25 - Ana membuat grup "Liburan"', True),
    ("13/06/2018, 21:25 - Tomás bergabung menggunakan tautan undangan grup ini", False),
    ("13/06/2018, 21:25 - Ana added Tomás", False),
    ("13/06/2018, 21:25 - Ana changed their phone number to a new number. Tap to message or add the new number.", False),
    ("13/06/2018, 21:25 - Messages and calls are end-to-end encrypted. No one outside of this chat, not even "
     "WhatsApp, can read or listen to them. Tap to learn more.", False),
])
def test_a_system_line_that_quotes_a_name_names_the_group(line: str, names_it: bool):
    message = one(line)
    assert message.kind is MessageKind.SYSTEM
    assert names_the_group(message.text) is names_it


@pytest.mark.parametrize("body", [
    "Ana added Tomás", "I added you to the list", "Bob left", "You were added to my list, congrats",
    "Mom added salt, then Dad removed it", "changed the subject to football", "Diese Nachricht ist wichtig",
    "Bisa di isi ketika adik mau menambahkan sumbangan",  # the Indonesian helpdesk's own line: "add" in a reply
])
def test_a_person_saying_added_or_left_is_not_a_system_message(body: str):
    for line in (f"[13/06/18, 21:25:15] Bob: {body}", f"13/06/2018, 21:25 - Bob: {body}"):
        message = one(line)
        assert (message.sender, message.kind, message.text) == ("Bob", MessageKind.TEXT, body)


# --------------------------------------------------------------------------------------------
# Media, attachments, deleted, edited
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("body", [
    "<Media omitted>", "<Medien ausgeschlossen>", "<Multimedia omitido>", "<Médias omis>", "<Mídia oculta>",
    "<Media weggelaten>", "<Media omessi>", "image omitted", "video omitted", "audio omitted", "sticker omitted",
    "GIF omitted", "document omitted", "Contact card omitted", "imagen omitida", "Bild weggelassen",
    "vidéo absente", "imagem ocultada", "immagine omessa", "afbeelding weggelaten", "null",
    "Report.pdf • 3 pages document omitted", "<Media tidak disertakan>",
])
def test_media_placeholders(body: str):
    message = one(f"[13/06/18, 21:25:15] Ana: {LRM}{body}")
    assert (message.kind, message.text, message.sender, message.attachment) == (MessageKind.MEDIA, body, "Ana", None)


@pytest.mark.parametrize("body", ["<image omitted>", "<video omitted>", "<audio omitted>", "<sticker omitted>",
                                  "<GIF omitted>", "<Contact card omitted>", "<Bild weggelassen>", "<imagen omitida>"])
def test_bracketed_media_placeholders_of_older_ios_exports(body: str):
    """Older iOS exports write ``<\u200eimage omitted>``: the mark inside the brackets (issue 21)."""
    message = one(f"[13/06/18, 21:25:15] Ana: <{LRM}{body[1:]}")
    assert (message.kind, message.text, message.sender) == (MessageKind.MEDIA, body, "Ana")


@pytest.mark.parametrize("body, placeholder", [
    ("Missed voice call", True), ("Missed video call", True), ("Missed group voice call", True),
    ("Panggilan suara tak terjawab", True), ("Verpasster Sprachanruf", True), ("Llamada perdida", True),
    ("<attached: 00000012-PHOTO-2019-03-12.jpg>", True), ("This message was deleted", True),
    ("<attached: 00000013-PHOTO.jpg>\nLook at this view", False), ("Missed voice call? I was asleep", False),
    ("I missed your video call", False),
])
def test_placeholders_are_told_from_messages(body: str, placeholder: bool):
    assert is_placeholder(body) is placeholder


def test_media_placeholder_with_a_caption():
    message = one("16.01.21, 23:15 - John Doe: <Medien ausgeschlossen>\nThis is a comment")
    assert (message.kind, message.text) == (MessageKind.MEDIA, "<Medien ausgeschlossen>\nThis is a comment")


@pytest.mark.parametrize("body, name", [
    ("<attached: 00000042-PHOTO-2020-06-07-15-13-20.jpg>", "00000042-PHOTO-2020-06-07-15-13-20.jpg"),
    ("< attached: 00000042-PHOTO-2020-06-07-15-13-20.jpg >", "00000042-PHOTO-2020-06-07-15-13-20.jpg"),
    (f"2015-08-04-PHOTO-00004762.jpg <{LRM}attached>", "2015-08-04-PHOTO-00004762.jpg"),
    ("IMG-20210428-WA0001.jpg (file attached)", "IMG-20210428-WA0001.jpg"),
    (f"{LRM}4f2680f1db95a8454775cc2eefc95bfc.jpg (Datei angehängt)", "4f2680f1db95a8454775cc2eefc95bfc.jpg"),
    ("IMG-1.jpg (archivo adjunto)", "IMG-1.jpg"), ("IMG-1.jpg (fichier joint)", "IMG-1.jpg"),
    ("IMG-1.jpg (arquivo anexado)", "IMG-1.jpg"), ("IMG-1.jpg (bestand bijgevoegd)", "IMG-1.jpg"),
    ("Max Caulfield.vcf (Datei angehängt)", "Max Caulfield.vcf"),
    ("IMG-20240101-WA0001.jpg (file terlampir)", "IMG-20240101-WA0001.jpg"),
    ("<terlampir: 00000006-PHOTO-2024-01-01-10-00-00.jpg>", "00000006-PHOTO-2024-01-01-10-00-00.jpg"),
])
def test_attachments(body: str, name: str):
    message = one(f"3/6/18, 1:55 p.m. - a: {body}")
    assert (message.attachment, message.kind, message.text) == (name, MessageKind.TEXT, body.replace(LRM, ""))


def test_attachment_with_a_caption_on_the_next_line():
    chat = parse_chat_text("16.01.21, 23:12 - John: abcdefgh.jpg (Datei angehängt)\nA comment\n"
                           "16.01.21, 23:13 - John: next")
    assert (chat.messages[0].attachment, chat.messages[0].text) == ("abcdefgh.jpg",
                                                                    "abcdefgh.jpg (Datei angehängt)\nA comment")
    assert chat.attachments == ["abcdefgh.jpg"]


@pytest.mark.parametrize("body", [
    "This message was deleted", "You deleted this message", "Diese Nachricht wurde gelöscht.",
    "Du hast diese Nachricht gelöscht.", "Se eliminó este mensaje.", "Eliminaste este mensaje.",
    "Ce message a été supprimé.", "Mensagem apagada", "Essa mensagem foi apagada", "Deze boodschap is verwijderd",
    "Dit bericht is verwijderd", "Questo messaggio è stato eliminato",
    "Pesan ini telah dihapus", "Pesan ini dihapus", "Anda menghapus pesan ini",
])
def test_deleted_messages(body: str):
    for line in (f"13/06/2018, 21:25 - Ana: {body}", f"[13/06/18, 21:25:15] Ana: {LRM}{body}"):
        message = one(line)
        assert (message.kind, message.sender, message.text) == (MessageKind.DELETED, "Ana", body)


@pytest.mark.parametrize("marker", [
    "<This message was edited>", "<Diese Nachricht wurde bearbeitet>", "<Se editó este mensaje.>",
    "<Ce message a été modifié>", "<Mensagem editada>", "<Pesan ini diedit>",
])
def test_edited_marker_is_removed(marker: str):
    message = one(f"[13/06/18, 21:25:15] Ana: see you at 8 {LRM}{marker}")
    assert (message.edited, message.text, message.kind) == (True, "see you at 8", MessageKind.TEXT)
    message = one(f"13/06/2018, 21:25 - Ana: first line\nsecond line {marker}")
    assert (message.edited, message.text) == (True, "first line\nsecond line")
    assert one("13/06/2018, 21:25 - Ana: not edited").edited is False


def test_participants_and_date_order_of_a_small_group_chat():
    chat = parse_chat_text(
        f"[20.06.19, 15:58:47] Lisbon trip: {LRM}Messages and calls are end-to-end encrypted.\n"
        f"[20.06.19, 15:58:47] Lisbon trip: {LRM}Ana created group “Lisbon trip”\n"
        f"[20.06.19, 15:58:48] Lisbon trip: {LRM}Ana added Tomás\n"
        "[20.06.19, 15:59:00] Tomás: Olá!\n"
        f"[20.06.19, 16:00:15] Ana: {LRM}<attached: 00000001-PHOTO-2019-06-20-16-00-15.jpg>\n"
        f"[21.06.19, 09:00:00] Tomás: {LRM}image omitted\n")
    assert senders(chat) == ["Tomás", "Ana"]
    assert [m.kind for m in chat.messages] == [MessageKind.SYSTEM] * 3 + [MessageKind.TEXT] * 2 + [MessageKind.MEDIA]
    assert chat.attachments == ["00000001-PHOTO-2019-06-20-16-00-15.jpg"]
    assert chat.date_order == "DMY"


def test_empty_and_whitespace_input():
    assert parse_chat_text("") == ParsedChat()
    assert parse_chat_text("\n\n  \n").messages == []


def test_parsing_time_grows_linearly_with_the_chat():
    # A ratio measured side by side, not a wall-clock limit: a loaded machine slows both sizes alike,
    # while a quadratic step would make ten times the messages take a hundred times as long.
    import time
    from datetime import timedelta

    def chat_text(count: int) -> str:
        start = datetime(2019, 1, 1)
        return "\n".join(f"{start + timedelta(minutes=7 * i):%d/%m/%y, %H:%M} - "
                         f"{('Ana', 'Bob', '+49 170 1234567')[i % 3]}: message number {i} with some words in it"
                         + ("\nand a second line" if i % 7 == 0 else "") for i in range(count))

    def fastest(text: str, expected: int) -> float:
        times = []
        for _ in range(3):
            started = time.perf_counter()
            assert len(parse_chat_text(text).messages) == expected
            times.append(time.perf_counter() - started)
        return min(times)

    small, big = chat_text(5_000), chat_text(50_000)
    ratio = fastest(big, 50_000) / fastest(small, 5_000)
    assert ratio < 25, f"10x the messages took {ratio:.1f}x as long"


# --------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------

FRAGMENTS = [
    "[", "]", "12/31/19", "31.12.2019", "2019-12-31", "1/2/20", "13. 6. 2018.", "06/2018/13", "12/31",
    "١٣/٦/٢٠١٨",
    ", ", " - ", " – ", ": ", " ", "10:00", "10:00:00", "21.25.15", "1:55", " PM", " am", f"{NNBSP}p. m.", " ص",
    "上午", "下午", "오후 ", " klo ", " à ", "Ana: ", "Lisbon trip: ", "Ana added Bob", "<Media omitted>",
    "<attached: x.jpg>", "x.jpg (file attached)", "This message was deleted", " <This message was edited>",
    "Messages and calls are end-to-end encrypted.", LRM, RLM, BOM, "\u2066", "\r\n", "\n", "\r", "\u2028",
    "\u0085", "\x00", "null", "\t", "🙈", "25:61", "99/99/99",
]
chat_like = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4)), max_size=60).map("".join)
header_lines = st.lists(
    st.tuples(st.sampled_from(["13/06/2018, 21:25 - ", "[13/06/18, 21:25:15] ", "6/30/23, 4:15 PM - ",
                               "2019/01/02, 10:00 - ", "12/31, 10:00 - ", "1/2/2019 10:00 - ", ""]),
              st.text(max_size=20)).map("".join),
    max_size=30).map("\n".join)


def split_lines(text: str) -> list[str]:
    lines = re.split("\r\n|\r|\n", text)
    if text.endswith(("\n", "\r")):
        lines.pop()
    return lines


def check_invariants(text: str, chat: ParsedChat) -> None:
    lines = split_lines(text)
    numbers = [m.line for m in chat.messages]
    assert numbers == sorted(set(numbers))
    assert all(1 <= n <= len(lines) for n in numbers)
    first = numbers[0] if numbers else len(lines) + 1
    # Nothing silently dropped: before the first message, every non-blank line is reported …
    assert chat.skipped_lines == [(n, lines[n - 1]) for n in range(1, first) if lines[n - 1].strip()]
    # … and each message holds its header line and every line up to the next header, except
    # blank lines at its end.
    for message, end in zip(chat.messages, [*numbers[1:], len(lines) + 1]):
        kept = message.text.count("\n") + 1
        assert kept <= end - message.line
        assert all(not lines[n - 1].strip() for n in range(message.line + kept, end))
        assert (message.sender is None) == (message.kind is MessageKind.SYSTEM)
    assert chat.date_order in ("DMY", "MDY", "YMD")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text())
def test_never_raises_on_any_text(text: str):
    check_invariants(text, parse_chat_text(text))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chat_like)
def test_never_raises_on_header_like_fragments(text: str):
    check_invariants(text, parse_chat_text(text))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(header_lines)
def test_never_raises_on_lines_with_headers(text: str):
    check_invariants(text, parse_chat_text(text))
