"""A rough guess of the language a chat line is written in, from its most common words.

Good enough to tell a chat's languages apart (so retrieval can compare a question with the
English and the Spanish messages each on their own scale), not to label text: short lines and
languages without a list here come out as "".
"""

from __future__ import annotations

import re

_COMMON = {
    "en": "the and you that was for are with have this not but what all they just what's it's i'm don't "
          "can will would there your about when out how did got going think know yeah too".split(),
    "es": "que los las del por una con para como pero más está estoy muy bien también porque cuando "
          "hay tengo eso esto ya sí hoy mañana vamos qué".split(),
    "nl": "het een van niet dat ik je is ook maar wel met voor dan nog als zijn heb bij wat naar kan "
          "jij zo haha echt weet moet".split(),
    "de": "und der die das nicht ist ich ein eine mit auf sich auch wie noch aber wir bin hast mal "
          "schon jetzt doch".split(),
    "fr": "les des est pas une que pour dans qui sur avec mais plus tout nous vous je c'est suis fait "
          "bien ça".split(),
    "it": "che non per una sono della con mi ma anche come cosa questo sei ho hai perché".split(),
    "pt": "não uma com para mas você está isso tem muito também então vou eu tá".split(),
}
_LANGUAGE_OF = {}
for _language, _words in _COMMON.items():
    for _word in _words:
        _LANGUAGE_OF.setdefault(_word, set()).add(_language)
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?", re.UNICODE)


def guess_language(text: str) -> str:
    """The language whose common words ``text`` uses most (at least two of them), else ""."""
    votes: dict[str, int] = {}
    for word in _WORD.findall(text.lower()):
        for language in _LANGUAGE_OF.get(word, ()):
            votes[language] = votes.get(language, 0) + 1
    if not votes:
        return ""
    best = max(votes, key=votes.get)
    ranked = sorted(votes.values(), reverse=True)
    return best if votes[best] >= 2 and (len(ranked) == 1 or ranked[0] > ranked[1]) else ""
