"""Words of a question that few passages hold: the surest link between a question and text in another language.

A name, place or term ("Bidikmisi", "Sholay", "Absurdle") is written the same in an English question and in
an Indonesian or romanised-Hindi message, where a small multilingual embedder barely connects the two. So a
passage sharing such a word with the question is lifted, on the z-score scale both chats and notes are ranked
on. Chat passages and note chunks follow the same rule, each judged rare among its own kind, so that neither
source gains on the other for it when both are asked (measured in docs/chat.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

#: A word counts as rare when at most this share of the passages searched hold it: question words ("who",
#: "said", a name everyone uses) lift nothing, and a question in another language than the text, whose words
#: are not in it, is left to the embedder alone. Under 100 passages no word is rare (1% is less than one).
RARE_SHARE = 0.01
#: The lift for each rare word a passage shares with the question (z-score units), at most two counted.
RARE_WORD_LIFT = 0.75
_WORD = re.compile(r"\w{4,}", re.UNICODE)


def rare_word_lifts(question: str, ids: np.ndarray, matching: Callable[[str, int], list[int]]) -> np.ndarray:
    """Per passage of ``ids`` (the passages searched), its lift for the rare words of ``question`` it holds.

    ``matching(fts_query, limit)``: the ids of at most ``limit`` passages matching an FTS5 query (one quoted
    word, so no word can act as FTS syntax).
    """
    most = RARE_SHARE * len(ids)
    lifts: dict[int, float] = {}
    for word in dict.fromkeys(word.lower() for word in _WORD.findall(question)):
        found = matching(f'"{word}"', int(most) + 2)
        if not found or len(found) > most:
            continue
        for passage_id in found:
            lifts[passage_id] = min(lifts.get(passage_id, 0.0) + RARE_WORD_LIFT, 2 * RARE_WORD_LIFT)
    return np.array([lifts.get(passage_id, 0.0) for passage_id in ids.tolist()]) if lifts else np.zeros(len(ids))
