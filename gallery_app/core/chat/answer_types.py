"""Whether a question asks for an amount, and whether a message holds one.

"How much did Rahul ask for the SUV?" is answered by "… all black, leather interior, 150000 Dhs", but the
embedder weighs what a passage is about, not whether it says any number at all: a passage about the same car
without a price ranks as high. Question answering has long matched the answer's type to the question's
(a number for "how much", a place for "where"); of those types, a number is the one a chat marks plainly.
The words are written from the languages the chats here are in (English, Dutch, Spanish, Indonesian,
romanised Hindi, German, Portuguese, Italian, French), not from their questions.
"""

from __future__ import annotations

import re

_ASKS_FOR_AN_AMOUNT = re.compile(
    r"\b(?:how (?:much|many|long|old|far|high|expensive)|what (?:price|time)|"  # English
    r"hoeveel|hoe (?:laat|lang|oud|duur)|"  # Dutch
    r"cu[aá]nt[oa]s?|a qu[eé] hora|qu[eé] precio|"  # Spanish
    r"berapa|"  # Indonesian
    r"kitn[aei]|"  # romanised Hindi
    r"wie ?viele?|wie (?:lange|alt|teuer)|um wie ?viel uhr|"  # German
    r"quant[oa]s?|que horas|combien|quelle heure)\b",  # Portuguese, Italian, French
    re.IGNORECASE)
#: Digits that are not an amount: a link's, an @-mentioned phone number's.
_NOT_AN_AMOUNT = re.compile(r"\S*://\S+|www\.\S+|@\d+")
_DIGIT = re.compile(r"\d")


def asks_for_an_amount(question: str) -> bool:
    """Whether a question asks how much, how many, how long or at what time ("¿Cuánto…?", "Berapa…?")."""
    return _ASKS_FOR_AN_AMOUNT.search(question) is not None


def holds_a_number(text: str) -> bool:
    """Whether a message's text has a digit outside links and @-mentions ("25k", "7,5 juta", "Sekitar 8ribu an")."""
    return _DIGIT.search(_NOT_AN_AMOUNT.sub(" ", text)) is not None
