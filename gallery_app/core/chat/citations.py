"""Passage numbers: the prompt numbers the passages it gives the model, and answers cite them.

``[1]`` is the first passage of the prompt (``Prompt.matches[0]``), whatever its rank in the search.
Small models often cite nothing, a number they were never given, or a passage that does not hold what
they wrote ("Daniel paid [6]" with [6] about a phone battery); an answer then cites the passages it shares
the most telling words with, else the top one, so every answer points at evidence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gallery_app.core.chat.grounding import content_words

#: "[1]", "[2, 3]" and "[1][2]" (two markers); two digits at most, so "[2024]" is not a citation.
_MARKERS = re.compile(r"\[\s*(\d{1,2}(?:\s*,\s*\d{1,2})*)\s*\]")


def marker(number: int) -> str:
    return f"[{number}]"


def cited_numbers(text: str, count: int) -> list[int]:
    """The passage numbers ``text`` cites, in order of first mention, only those from 1 to ``count``."""
    numbers: list[int] = []
    for found in _MARKERS.finditer(text):
        for part in found.group(1).split(","):
            number = int(part)
            if 1 <= number <= count and number not in numbers:
                numbers.append(number)
    return numbers


def strip_markers(text: str) -> str:
    """``text`` without citation markers (and the space before each)."""
    return _MARKERS.sub("", re.sub(r"[^\S\n]+(?=\[\s*\d{1,2}(?:\s*,\s*\d{1,2})*\s*\])", "", text))


def citations(answer: str, passages: Sequence[str]) -> list[int]:
    """The numbers (1-based) of the ``passages`` (their text as the model read it) ``answer`` rests on."""
    if not passages:
        return []
    cited = cited_numbers(answer, len(passages))
    words = content_words(strip_markers(answer))
    read = [content_words(passage) for passage in passages]
    # A word every passage has (the participants' names, often) says nothing about which one was used.
    everywhere = set.intersection(*read) if len(read) > 1 else set()
    shared = [len((words & passage) - everywhere) for passage in read]
    best = max(shared)
    supported = [number for number in cited if shared[number - 1] > 0]
    if supported or (cited and best == 0):
        return supported or cited  # what the model cited, less the passages that do not hold its words
    if best == 0:
        return [1]
    return [number for number, count in enumerate(shared, start=1) if count == best]
