"""Checks that an answer is supported by the passages it was given.

Small local models fill gaps with plausible names and numbers. An answer is refused (turned
into "I don't know") when it names a number, amount or capitalised name that appears nowhere in
its context, or when it only repeats the question's own words, which answers nothing.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,:]\d+)*(?![\w])")
_CAPITALISED = re.compile(r"\b[A-ZÀ-ÖØ-Þ][\w'’-]+")
_WORD = re.compile(r"\w+", re.UNICODE)
#: Capitalised words that are ordinary at the start of a clause or as pronouns.
_ORDINARY = {
    "i", "the", "a", "an", "he", "she", "they", "we", "you", "it", "yes", "no", "on", "in", "at", "by", "for",
    "they're", "it's", "i'm", "i'll", "that", "this", "there", "answer", "person", "because", "after", "before",
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "january", "february",
    "march", "april", "may", "june", "july", "august", "september", "october", "november", "december",
}
_FILLER = {
    "the", "a", "an", "is", "was", "were", "are", "be", "it", "its", "of", "to", "in", "on", "for", "and", "or",
    "that", "this", "answer", "person", "who", "what", "which", "when", "where", "how", "did", "does", "do", "s",
    "i", "you", "he", "she", "they", "we", "my", "your", "his", "her", "their", "our", "me", "him", "them",
}


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()


@dataclass
class GroundingCheck:
    unsupported: list[str] = field(default_factory=list)
    echoes_question: bool = False

    @property
    def grounded(self) -> bool:
        return not self.unsupported and not self.echoes_question


def check_answer(answer: str, context: str, question: str) -> GroundingCheck:
    folded_context = _fold(context)
    context_words = set(_WORD.findall(folded_context))
    result = GroundingCheck()
    for number in _NUMBER.findall(answer):
        if not re.search(rf"(?<![\w.]){re.escape(number)}(?![\w])", context):
            result.unsupported.append(number)
    for name in _CAPITALISED.findall(answer):
        word = _fold(name).strip("'’-")
        if word and word not in _ORDINARY and word.split("'")[0] not in context_words:
            result.unsupported.append(name)
    answer_words = {w for w in _WORD.findall(_fold(answer)) if w not in _FILLER}
    question_words = set(_WORD.findall(_fold(question)))
    result.echoes_question = bool(answer_words) and answer_words <= question_words
    return result
