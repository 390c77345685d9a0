"""What asking yields, in order, and the status notes of the chat's slow steps.

``ChatSession.ask`` yields ``AskEvent``s: ``MatchesFound`` (the passages, shown before the model says
anything), possibly a ``Status`` while the language model is read, ``AnswerPiece``s as the model writes,
then the finished ``Answer``. A window or a terminal tells them apart by type, and a ``Status`` by its
``kind``, never by wording: the wording is written once, here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from gallery_app.core.chat.evidence import ClosestMessage
from gallery_app.core.chat.grounding import GroundingCheck
from gallery_app.core.chat.prompting import Prompt
from gallery_app.core.chat.retrieval import Match, Retrieval

NOTHING_FOUND = "I couldn't find anything about that in your chats."
#: The same, said of what was searched: the chats, the notes, or both.
NOTHING_FOUND_IN_NOTES = "I couldn't find anything about that in your notes."
NOTHING_FOUND_IN_BOTH = "I couldn't find anything about that in your chats or notes."
_NOTHING_FOUND = frozenset({NOTHING_FOUND, NOTHING_FOUND_IN_NOTES, NOTHING_FOUND_IN_BOTH})
#: An answer the grounding check declined, or the model's own "I don't know".
UNSUPPORTED = "I don't know: the messages I found don't say."
#: The same when note passages were among what was found (a note has no messages).
UNSUPPORTED_PASSAGES = "I don't know: the passages I found don't say."


class StatusKind(Enum):
    LOADING_EMBEDDER = "Loading the message search model…"
    SEARCHING = "Searching your chats…"
    LOADING_LLM = "Loading the language model…"
    READING_FILE = "Reading {subject}…"
    # The steps of an import after its messages are stored (a job's status bar label names them).
    ADDING_PHOTOS = "Adding photos…"
    EMBEDDING_MESSAGES = "Embedding messages…"

    @property
    def loads_a_model(self) -> bool:
        """Seconds pass with nothing else moving: worth saying beyond the conversation too."""
        return self in (StatusKind.LOADING_EMBEDDER, StatusKind.LOADING_LLM)


@dataclass(frozen=True)
class Status:
    """What is being done now, before there is anything else to show."""

    kind: StatusKind
    #: What the step works on, where its wording names it (the file being read).
    subject: str = ""

    @property
    def text(self) -> str:
        return self.kind.value.format(subject=self.subject)


@dataclass
class MatchesFound:
    retrieval: Retrieval
    search_query: str
    question: str = ""


@dataclass(frozen=True)
class AnswerPiece:
    """A piece of the answer as the model writes it (not yet checked: the ``Answer`` is)."""

    text: str


@dataclass
class Answer:
    question: str
    search_query: str
    retrieval: Retrieval
    prompt: Prompt | None
    #: What the person reads: the answer, or a plain "I don't know" and the closest message.
    text: str
    #: What the model wrote, before an unsupported answer was replaced by "I don't know".
    raw_text: str = ""
    grounding: GroundingCheck | None = None
    #: The passages the answer rests on, as numbers of ``prompt.matches`` (1-based, as the model saw them).
    citations: list[int] = field(default_factory=list)
    #: Set when the answer is "I don't know" (the model's, or the grounding check's).
    closest: ClosestMessage | None = None
    declined: bool = False

    @property
    def knows(self) -> bool:
        return bool(self.text) and not self.declined and self.text not in _NOTHING_FOUND

    @property
    def cited_matches(self) -> list[Match]:
        if self.prompt is None:
            return []
        return [self.prompt.matches[n - 1] for n in self.citations if 0 < n <= len(self.prompt.matches)]


AskEvent = MatchesFound | Status | AnswerPiece | Answer
