"""Whether a question follows up on the one before it, or is a question of its own.

A person asks one conversation's questions in a row about different things: "Who paid for the hotel?",
then, after importing another chat, a long question about a word game. Searching the second with the
first ("follow-up" search) finds neither. A follow-up leans on the turn before it, and says so in its
words: it opens with a connective ("And who got it right?", "¿Y quién…?", "Lalu berapa…?"), or it is
too short to be a question on its own ("And for the first day?"), or it points back with a pronoun whose
antecedent is not in the question ("How much was it?", "What did he wear instead?"). A long question
that names what it asks about ("What did Rens find … the words he entered …?") stands alone.

The word lists are the languages the app's chats are written in (English, Dutch, German, Spanish,
Portuguese, French, Indonesian, romanised Hindi); a language without a list is judged by length alone.
"""

from __future__ import annotations

import re
import unicodedata

#: Words that open a question continuing the previous one.
CONNECTIVES = frozenset({
    "and", "but", "so", "also", "then", "plus",  # en ("what about", "how about": below)
    "en", "maar", "dus", "ook", "toen",  # nl
    "und", "aber", "dann", "auch",  # de
    "y", "e", "pero", "entonces", "tambien", "ademas",  # es, pt
    "mas", "entao",  # pt
    "et", "mais", "alors", "donc",  # fr
    "lalu", "terus", "trus", "dan", "kalau", "kalo", "jadi", "tapi", "kemudian", "trs",  # id
    "aur", "toh", "phir", "lekin",  # romanised Hindi
})
#: Dutch "en" ("and") is Spanish and French "en" ("in"): it opens a follow-up when a Dutch question word
#: or pronoun comes next ("En wie…?"), not in "¿En qué restaurante…?".
_DUTCH_AFTER_EN = frozenset({"wie", "wat", "waar", "wanneer", "hoe", "hoeveel", "hoelang", "welke", "welk", "waarom",
                             "hij", "zij", "ze", "die", "dat", "daar", "wat", "is", "was", "heeft", "had"})
#: Two-word openings that ask about something else of the same subject.
OPENING_PAIRS = frozenset({("what", "about"), ("how", "about"), ("wat", "dacht")})
#: Pronouns that stand for a thing, a place or a group mentioned before; a name in the question does not
#: resolve them ("Where is it?").
THING_PRONOUNS = frozenset({
    "it", "its", "that", "those", "these", "them", "there",  # en
    "dat", "die", "daar", "ervan", "erover", "ervoor", "hun",  # nl
    "das", "dort", "davon", "dafur", "ihnen",  # de
    "eso", "esa", "ese", "esos", "esas", "ello", "ellos", "ellas", "alli", "ahi", "isso", "isto",  # es, pt
    "ca", "cela", "leur", "eux",  # fr
    "itu", "tersebut", "mereka", "sana", "situ",  # id
    "woh", "wo", "vo", "unka", "unki", "unke", "unhe", "unhone", "wahan", "vaha",  # romanised Hindi
})
#: Possessives: what they belong to is usually named just before them ("the group chat … its name",
#: "Rahul … his"), so any content word before one resolves it.
POSSESSIVES = frozenset({"its", "his", "their", "zijn", "hun", "sein", "seine", "su", "sus", "dele", "dela",
                         "uska", "uski", "uske", "unka", "unki", "unke"})
#: Pronouns for a person, resolved when the question names someone before them.
PERSON_PRONOUNS = frozenset({
    "he", "she", "him", "her", "his", "hers",  # en
    "hij", "zij", "hem", "haar", "zijn",  # nl
    "er", "sie", "ihm", "ihn", "ihr", "sein", "seine",  # de
    "ella", "su", "sus", "ele", "ela", "dele", "dela",  # es, pt
    "il", "elle", "lui",  # fr
    "dia", "beliau", "ia",  # id
    "usne", "uska", "uski", "uske", "usko",  # romanised Hindi
})
#: A question with this many words or fewer, naming no one, cannot say on its own what it is about.
SHORT_WORDS = 3
#: A pronoun in a question with more content words than this has what it stands for in the question.
ANAPHOR_MAX_CONTENT = 6
#: Words that ask, not say what is asked about (not counted as content).
QUESTION_WORDS = frozenset({
    "who", "what", "which", "when", "where", "why", "how", "much", "many", "did", "does", "do", "was", "were",
    "is", "are", "the", "a", "an", "of", "to", "for", "in", "on", "at", "by", "with", "from", "could", "can",
    "would", "will", "they", "we", "you", "i", "get", "got", "say", "said", "end", "up",
    "wie", "wat", "welke", "wanneer", "waar", "waarom", "hoe", "veel", "de", "het", "een", "van", "is", "was",
    "quien", "que", "cual", "cuando", "donde", "por", "como", "cuanto", "cuantos", "los", "las", "un", "una",
    "del", "se", "no",
    "siapa", "apa", "kapan", "mana", "berapa", "kenapa", "mengapa", "bagaimana", "yang", "di", "ke", "untuk",
    "kya", "kaun", "kab", "kahan", "kyun", "kaise", "kitna", "kitne", "ka", "ki", "ke", "hai", "tha", "thi",
})

_WORD = re.compile(r"\w+", re.UNICODE)


def _words(text: str) -> list[tuple[str, bool]]:
    """(folded word, written capitalised) in order; accents folded so "quién" is "quien"."""
    words = []
    for raw in _WORD.findall(text):
        folded = unicodedata.normalize("NFKD", raw).encode("ascii", "ignore").decode().lower()
        if folded:
            words.append((folded, raw[:1].isupper()))
    return words


def _names_before(words: list[tuple[str, bool]], position: int) -> bool:
    """A capitalised word before ``position`` that is not the question's first word: a name."""
    return any(capital for _word, capital in words[1:position])


#: Forms of "to be" that make "there" existential ("Was there a deadline?"), not a place mentioned before.
_BE = frozenset({"is", "was", "are", "were", "be", "been"})


def _points_back(word: str, words: list[tuple[str, bool]], position: int) -> bool:
    if word == "there":
        around = {w for w, _ in words[max(0, position - 1):position + 2]}
        return not around & _BE
    if word in POSSESSIVES:
        return not any(w not in QUESTION_WORDS for w, _ in words[:position])
    if word in THING_PRONOUNS:
        return True
    if word.endswith("nya") and len(word) > 5:  # Indonesian "-nya": its/the one mentioned ("biayanya")
        return True
    return word in PERSON_PRONOUNS and not _names_before(words, position)


def is_follow_up(question: str) -> bool:
    """Whether ``question`` reads as leaning on the turn before it (see the module's docstring)."""
    words = _words(question)
    if not words:
        return False
    first = words[0][0]
    following = words[1][0] if len(words) > 1 else ""
    if first == "en":
        if following in _DUTCH_AFTER_EN:
            return True
    elif first in CONNECTIVES or (first, following) in OPENING_PAIRS:
        return True
    if len(words) <= SHORT_WORDS and not _names_before(words, len(words)):
        return True
    content = [w for w, _ in words if w not in QUESTION_WORDS and w not in THING_PRONOUNS
               and w not in PERSON_PRONOUNS and w not in POSSESSIVES]
    if len(content) > ANAPHOR_MAX_CONTENT:
        return False
    return any(_points_back(word, words, position) for position, (word, _) in enumerate(words))
