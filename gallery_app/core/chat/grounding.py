"""Checks that an answer is supported by the passages it was given.

Small local models fill gaps with plausible names and numbers. An answer is refused (turned
into "I don't know") when it names a number, amount or capitalised name that appears nowhere in
its context, when it only repeats the question's own words, or when it is all filler ("The answer is:"),
which answers nothing.

They also slip from answering into writing the chat itself — the next ``Name: text`` line, a
message header, ``<Media omitted>`` — because the context they read is a chat log. Such text is
never an answer, however well its words match the context, so it is refused too.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

import simplemma

from gallery_app.core.chat.whatsapp import clean_text, header_prefix, is_placeholder

_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,:]\d+)*(?![\w])")
#: A word and what clings to it ("Daniel’s", "Jean-Luc"); a capitalised one is a name to check, in any script.
_NAME_LIKE = re.compile(r"\b[^\W\d_][\w'’-]+")
_WORD = re.compile(r"\w+", re.UNICODE)
#: Capitalised words that are ordinary at the start of a clause or as pronouns.
_ORDINARY = {
    "i", "the", "a", "an", "he", "she", "they", "we", "you", "it", "yes", "no", "on", "in", "at", "by", "for",
    "they're", "it's", "i'm", "i'll", "that", "this", "there", "answer", "person", "because", "after", "before",
    "my", "your", "his", "her", "its", "our", "their", "me", "him", "us", "them", "these", "those",
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "january", "february",
    "march", "april", "may", "june", "july", "august", "september", "october", "november", "december",
}
_FILLER = {
    "the", "a", "an", "is", "was", "were", "are", "be", "it", "its", "of", "to", "in", "on", "for", "and", "or",
    "that", "this", "answer", "question", "person", "who", "what", "which", "when", "where", "how", "did", "does", "do", "s",
    "i", "you", "he", "she", "they", "we", "my", "your", "his", "her", "their", "our", "me", "him", "them",
}


#: Whole labels that open an answer ("Answer: 5", "Total: £340"), not a chat line, in the export languages.
_ANSWER_LABELS = {
    "a", "q", "answer", "question", "note", "notes", "source", "sources", "context", "reason", "result", "total",
    "summary", "date", "time", "price", "cost", "amount", "place", "location", "who", "what", "when", "where",
    "why", "how", "which", "yes", "no", "ok", "okay", "sure", "update", "edit", "important", "example", "hint",
    "tip", "warning", "step", "reply", "response", "conclusion", "explanation", "details", "info", "fact",
    "antwort", "frage", "hinweis", "quelle", "kontext", "ergebnis", "ja", "nein", "respuesta", "pregunta",
    "fuente", "contexto", "nota", "si", "reponse", "oui", "non", "risposta", "domanda", "resposta", "pergunta",
    "sim", "nao", "antwoord", "vraag", "bron",
}
#: Words that make any label an answer's ("Short answer: …", "Final Answer: …").
_ANSWER_WORDS = {"answer", "antwort", "respuesta", "reponse", "risposta", "resposta", "antwoord", "question",
                 "source", "sources", "context", "summary", "total"}
#: "Name: " at the start of a line; 40 characters is longer than nearly every contact name.
_LABEL = re.compile(r"(\S.{0,40}?):\s")
_PHONE = re.compile(r"\+?\d[\d\s().-]{6,}")
#: Longest message header ("[12/03/2017, 10:04:11 p. m.] "): shorter starts may still become one.
_HEADER_CHARS = 32


def _fold(text: str) -> str:
    """``text`` in lower case without accents, in every script ("Μαρία" and "μαρια" alike, "Ærø" kept)."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


def _capitalised(text: str) -> list[str]:
    return [word for word in _NAME_LIKE.findall(text) if word[0].isupper()]


def content_words(text: str) -> set[str]:
    """The words of ``text`` that carry meaning (accents folded, filler dropped)."""
    return {word for word in _WORD.findall(_fold(text)) if word not in _FILLER}


def _lemmas(words: Iterable[str]) -> set[str]:
    """Each word's dictionary form, so that "The aircraft that Daniel flew to Valencia on." is seen to
    restate "Which aircraft did Daniel fly to Valencia on?". English only: the answers are the chat
    model's, which writes English; a word of another language is left as it is."""
    return {simplemma.lemmatize(word, lang="en").lower() for word in words}


def _bare_name(label: str) -> str:
    return label.strip().lstrip("~").strip()  # "~ Sophia": WhatsApp's mark for a contact not saved


def _is_sender(label: str, participants: set[str]) -> bool:
    """Whether ``label`` (the text before a line's first ": ") reads as who wrote a message."""
    name = _bare_name(label)
    folded = _fold(name).strip()
    if not name:
        return False
    if name.casefold() in participants or _PHONE.fullmatch(name):
        return True
    words = name.split()
    if folded in _ANSWER_LABELS or len(words) > 5 or not any(ch.isalpha() for ch in name):
        return False
    if any(_fold(word).strip(".,'’") in _ANSWER_WORDS for word in words):
        return False
    for position, word in enumerate(words):
        initial = next((ch for ch in word if ch.isalpha()), "")
        # Names are capitalised (scripts without case pass); "van", "de", "la" inside one are not.
        particle = 0 < position < len(words) - 1 and len(word) <= 3
        if initial.islower() and not particle:
            return False
    return True


def continues_chat_log(text: str, participants: Iterable[str] = (), *, finished: bool = True) -> bool | None:
    """Whether ``text`` is written as chat log — its first line a ``Name: `` line, a message header or a
    media placeholder — rather than as an answer.

    While the answer is still being written (``finished=False``) this is None as long as its start
    could still turn out either way, so a caller can hold those first pieces back.
    """
    start = clean_text(text).lstrip()
    first, newline, _rest = start.partition("\n")
    complete = finished or bool(newline)
    if not first.strip():
        return False if complete else None
    if first[0].isdigit() or first[0] == "[":
        header = header_prefix(first)
        if header is not None:
            end, after = header
            if end != " ":
                return True
            # "12/03/2017 at 10:04 they arrived" is a sentence; only a sender after it makes it a header.
            return continues_chat_log(after, participants, finished=complete)
        if not complete and len(first) < _HEADER_CHARS:
            return None
    if complete and is_placeholder(first):
        return True
    if not complete and first[0] == "<":
        return None  # "<attached: …>" has a colon but no sender
    label = _LABEL.match(first + " " if complete else first)
    if label is not None:
        return _is_sender(label.group(1), {_bare_name(p).casefold() for p in participants})
    if complete:
        return False
    return None if _could_be_sender(first, participants) or _could_be_placeholder(first) else False


def _could_be_sender(start: str, participants: Iterable[str]) -> bool:
    """Whether ``start`` (no ": " yet) can still grow into a ``Name: `` label."""
    if len(start) > 41:
        return False
    if any(_bare_name(p).casefold().startswith(_bare_name(start).casefold()) for p in participants):
        return True
    words = start.split()
    written = words if start[-1:].isspace() else words[:-1]  # the last word may still be growing
    # Judged as the middle of a name, so "de" in "Ana de…" passes until the name ends.
    return len(words) <= 5 and _is_sender(" ".join(written + ["X"]), set()) if written else True


def _could_be_placeholder(start: str) -> bool:
    # Placeholders are a word or two ("image omitted", "Bild weggelassen"); a third word rules them out.
    return len(start.split()) < 3 and len(start) < 24


@dataclass
class GroundingCheck:
    unsupported: list[str] = field(default_factory=list)
    echoes_question: bool = False
    #: Only filler, such as "The answer to this question is:" with the answer itself never written.
    says_nothing: bool = False
    #: The "answer" continues the chat log (a "Name: " line, a header, a media placeholder).
    chat_log: bool = False

    @property
    def grounded(self) -> bool:
        return not (self.unsupported or self.echoes_question or self.says_nothing or self.chat_log)


def check_answer(answer: str, context: str, question: str, participants: Iterable[str] = (),
                 headings: Iterable[str] = ()) -> GroundingCheck:
    """How ``answer`` stands against the ``context`` it was given. ``headings`` are the context's passage
    headings ("Weekend away, 2024-06-10"): an answer that is only one of them, or only a lead-in to one
    ("The passage you used is: …"), says nothing."""
    folded_context = _fold(context)
    context_words = set(_WORD.findall(folded_context))
    result = GroundingCheck()
    for number in _NUMBER.findall(answer):
        if not re.search(rf"(?<![\w.]){re.escape(number)}(?![\w])", context):
            result.unsupported.append(number)
    for name in _capitalised(answer):
        word = re.split(r"['’]", _fold(name).strip("'’-"))[0]  # "Daniel's" is Daniel's
        if word and word not in _ORDINARY and word not in context_words:
            result.unsupported.append(name)
    answer_words = _lemmas(content_words(answer))
    question_words = _lemmas(_WORD.findall(_fold(question)))
    result.echoes_question = bool(answer_words) and answer_words <= question_words
    result.says_nothing = _says_nothing(answer, headings)
    result.chat_log = bool(continues_chat_log(answer, participants))
    return result


def _says_nothing(answer: str, headings: Iterable[str]) -> bool:
    """Only filler ("The answer is:"), a passage's heading, or a lead-in that announces what never comes."""
    for heading in headings:
        answer = re.sub(re.escape(heading), " ", answer, flags=re.IGNORECASE)
    if answer.rstrip().endswith(":"):  # "Here is what they said:" and then the answer ended
        return True
    return not any(word not in _FILLER for word in _WORD.findall(_fold(answer)))
