"""The days a question names, in the languages chats are written in."""

from __future__ import annotations

from datetime import date

import pytest

from gallery_app.core.chat.question_dates import DaySpan, asks_when, spans_in_question, spelled_day

CHAT_2022 = (date(2022, 1, 23), date(2022, 3, 29))
CHAT_2016_2018 = (date(2016, 8, 3), date(2018, 2, 22))


def day(y, m, d) -> DaySpan:
    return DaySpan(date(y, m, d), date(y, m, d))


@pytest.mark.parametrize("question,expected", [
    ("What did Frans share on 1 February?", [day(2022, 2, 1)]),
    ("Waarom stuurde Vicky in de nacht van 27 januari geen uitslag?", [day(2022, 1, 27)]),
    ("Hoe kwam Rens op 12 maart aan het juiste land?", [day(2022, 3, 12)]),
    ("Was hat Rens am 3. März geschrieben?", [day(2022, 3, 3)]),
    ("What happened on February 1st, 2022?", [day(2022, 2, 1)]),
    ("Qué pasó el 5 de marzo?", [day(2022, 3, 5)]),
    ("Apa yang terjadi pada 12 Maret?", [day(2022, 3, 12)]),
    ("Siapa yang datang di bulan Maret?", [DaySpan(date(2022, 3, 1), date(2022, 3, 31))]),
    ("What was said on 2022-02-11?", [day(2022, 2, 11)]),
    ("Where did they meet up in March?", [DaySpan(date(2022, 3, 1), date(2022, 3, 31))]),
    ("May I ask who won?", []),
    ("Who said it in November 2016?", []),  # outside this chat: nothing to narrow
])
def test_dates_in_a_question(question, expected):
    assert spans_in_question(question, *CHAT_2022) == expected


def test_a_month_without_a_year_means_every_year_the_chat_covers():
    assert spans_in_question("What did they invent in September?", *CHAT_2016_2018) == [
        DaySpan(date(2016, 9, 1), date(2016, 9, 30)), DaySpan(date(2017, 9, 1), date(2017, 9, 30))]
    assert spans_in_question("in September 2016", *CHAT_2016_2018) == [DaySpan(date(2016, 9, 1), date(2016, 9, 30))]


@pytest.mark.parametrize("question,expected", [
    ("Where did Rahul go for the Thanksgiving holiday in 2016?", [DaySpan(date(2016, 1, 1), date(2016, 12, 31))]),
    ("¿Qué pasó en 2017?", [DaySpan(date(2017, 1, 1), date(2017, 12, 31))]),
    ("in September 2016", [DaySpan(date(2016, 9, 1), date(2016, 9, 30))]),  # the month, not also its year
    ("on 2017-03-01", [day(2017, 3, 1)]),
    ("What happened in 2019?", []),  # outside the chat
    ("Who watched the 2016-17 season?", []),  # a range, not a year
    ("Was the form 2000 naira?", []),  # an amount, and outside the chat anyway
])
def test_a_year_alone_is_a_span_of_the_whole_year(question, expected):
    assert spans_in_question(question, *CHAT_2016_2018) == expected


def test_impossible_dates_are_ignored():
    assert spans_in_question("on 31 February", *CHAT_2022) == []


@pytest.mark.parametrize("question, asks", [
    ("And when was it held last year?", True), ("¿Cuándo empezarían las admisiones?", True),
    ("Wanneer gaan we weg?", True), ("Kapan ujian tulis dimulai?", True), ("Certificates kab bheje the?", True),
    ("Who paid for the hotel?", False), ("Siapa yang datang?", False),
])
def test_a_question_that_asks_for_a_time(question: str, asks: bool):
    assert asks_when(question) is asks


def test_a_day_is_spelled_in_english_whatever_the_locale():
    assert spelled_day(date(2022, 1, 29)) == "Saturday 29 January 2022"
    assert spelled_day(date(2016, 11, 20)) == "Sunday 20 November 2016"
