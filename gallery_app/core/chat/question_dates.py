"""The days a question names ("on 1 February", "op 11 februari", "in November 2016", "am 3. März", "12 Maret", "in 2016").

People ask about chats by date far more often than documents, and an embedder cannot match
"on 25 January" to a message's timestamp: the date is metadata, not text. This reads explicit
dates, months and years in the languages chats are commonly written in; a date without a year gets
every year the chat covers. Relative dates ("yesterday", "last summer") are left alone: relative to what
is ambiguous when the chat is years old.
"""

from __future__ import annotations

import calendar
import re
import unicodedata
from dataclasses import dataclass
from datetime import date, timedelta

_MONTHS = {
    1: "january jan januari januar janvier enero gennaio janeiro jänner",
    2: "february feb februari februar fevrier février febrero febbraio fevereiro",
    3: "march mar maart märz marz mars marzo março marco maret",
    4: "april apr avril abril aprile",
    5: "may mei mai mayo maggio maio",
    6: "june jun juni juin junio giugno junho",
    7: "july jul juli juillet julio luglio julho",
    8: "august aug augustus aout août agosto agustus",
    9: "september sep sept septembre septiembre settembre setembro",
    10: "october oct oktober octobre octubre ottobre outubro okt",
    11: "november nov novembre noviembre novembro",
    12: "december dec dezember decembre décembre diciembre dicembre dezembro dez desember",
}


def _fold(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text.lower()) if not unicodedata.combining(c))


_MONTH_BY_NAME = {_fold(name): number for number, names in _MONTHS.items() for name in names.split()}
# "may"/"mar"/"mai"/"dez" are ordinary words too; they count as months only beside a day or a year.
_AMBIGUOUS = {"may", "mar", "mai", "dez", "jan", "sep", "dec", "mei"}
_MONTH = "(?P<month>" + "|".join(sorted(map(re.escape, _MONTH_BY_NAME), key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th|e|er|de|ste|\.|º)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_PATTERNS = [
    # 1 February 2022, 1st of February, 11 februari, 3. März, le 5 mars, 5 de marzo
    re.compile(rf"\b{_DAY}\s+(?:of\s+|de\s+)?{_MONTH}(?:\s*,?\s*(?:de\s+)?{_YEAR})?\b"),
    # February 1, February 1st 2022, February 1, 2022
    re.compile(rf"\b{_MONTH}\s+{_DAY}(?:\s*,?\s*{_YEAR})?\b"),
    # 2022-02-01
    re.compile(r"\b(?P<iso>(?:19|20)\d\d-[01]\d-[0-3]\d)\b"),
    # November 2016, in March, van maart
    re.compile(rf"\b(?:in|during|of|from|van|im|en|dans|em|del|di|uit|bulan)\s+{_MONTH}(?:\s+{_YEAR})?\b"),
    re.compile(rf"\b{_MONTH}\s+{_YEAR}\b"),
    # in 2016, en 2021, tahun 2018: a year alone, last so that a date or month that holds it wins.
    # Not part of a range or a number ("2016-17", "2018/19", "1.2019").
    re.compile(rf"(?<![-/.:])\b{_YEAR}\b(?![-/.:]?\d)"),
]


@dataclass(frozen=True)
class DaySpan:
    first: date
    last: date

    def contains(self, day: date) -> bool:
        return self.first <= day <= self.last

    def distance(self, day: date) -> int:
        """Days from the span (0 inside it)."""
        if day < self.first:
            return (self.first - day).days
        return max(0, (day - self.last).days)


def _years(chat_first: date | None, chat_last: date | None, year: str | None) -> list[int]:
    if year:
        return [int(year)]
    if chat_first is None or chat_last is None:
        return []
    return list(range(chat_first.year, chat_last.year + 1))


def spans_in_question(question: str, chat_first: date | None = None, chat_last: date | None = None) -> list[DaySpan]:
    """The day spans a question names, one per year the chat covers when it names no year."""
    text = _fold(question)
    spans: list[DaySpan] = []
    taken: list[tuple[int, int]] = []
    for pattern in _PATTERNS:
        for found in pattern.finditer(text):
            if any(start < found.end() and found.start() < end for start, end in taken):
                continue  # "1 February 2022" is one date, not also "February 2022"
            groups = found.groupdict()
            if groups.get("iso"):
                try:
                    day = date.fromisoformat(groups["iso"])
                except ValueError:
                    continue
                spans.append(DaySpan(day, day))
                taken.append(found.span())
                continue
            name = groups.get("month")
            if name is None:
                year = int(groups["year"])
                spans.append(DaySpan(date(year, 1, 1), date(year, 12, 31)))
                taken.append(found.span())
                continue
            month = _MONTH_BY_NAME[name]
            if name in _AMBIGUOUS and not (groups.get("day") or groups.get("year")):
                continue
            for year in _years(chat_first, chat_last, groups.get("year")):
                if groups.get("day"):
                    day_number = int(groups["day"])
                    if not 1 <= day_number <= calendar.monthrange(year, month)[1]:
                        continue
                    day = date(year, month, day_number)
                    spans.append(DaySpan(day, day))
                else:
                    spans.append(DaySpan(date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])))
            taken.append(found.span())
    if chat_first is not None and chat_last is not None and spans:
        # A date outside the chat (the wrong year guessed) cannot narrow anything.
        spans = [s for s in spans if s.last >= chat_first - timedelta(days=1) and s.first <= chat_last + timedelta(days=1)]
    return list(dict.fromkeys(spans))


_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
#: English first in each month's names above.
_MONTH_NAMES = tuple(_MONTHS[number].split()[0].capitalize() for number in range(1, 13))


def spelled_day(day: date) -> str:
    """"Saturday 29 January 2022", in English whatever the machine's locale (strftime's names follow it)."""
    return f"{_WEEKDAYS[day.weekday()]} {day.day:02d} {_MONTH_NAMES[day.month - 1]} {day.year}"


#: Words that ask for a time, in the languages above and Indonesian and romanised Hindi.
_WHEN = frozenset({"when", "wanneer", "wann", "cuando", "quando", "quand", "kapan", "kab"})


def asks_when(question: str) -> bool:
    """Whether a question asks for a time ("When was it held last year?", "¿Cuándo…?", "Kapan…?")."""
    return any(word in _WHEN for word in re.findall(r"\w+", _fold(question)))
