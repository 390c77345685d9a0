"""Asking questions about your chats: retrieve, show the passages, then stream a grounded answer.

``ChatSession.ask`` is a plain generator of ``AskEvent``s (``core.chat.events``) — first a ``MatchesFound``
(so the passages can be shown before the model says anything), a ``Status`` while the model's weights are
read, then the answer's pieces, then the finished ``Answer`` with the exact prompt — which a UI worker can
relay and cancel between tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import apsw

from gallery_app.core.chat.ask_options import AskOptions, FollowUps
from gallery_app.core.chat.chat_model import ChatModel
from gallery_app.core.chat.citations import citations, strip_markers
from gallery_app.core.chat.events import (
    NOTHING_FOUND, NOTHING_FOUND_IN_BOTH, NOTHING_FOUND_IN_NOTES, UNSUPPORTED, UNSUPPORTED_PASSAGES, Answer, AnswerPiece,
    AskEvent, MatchesFound, Status, StatusKind,
)
from gallery_app.core.chat.evidence import closest_message, closest_note_line
from gallery_app.core.chat.follow_ups import is_follow_up
from gallery_app.core.chat.grounding import check_answer, continues_chat_log
from gallery_app.core.chat.prompting import (
    DONT_KNOW, Conversation, InstructionsStrategy, Prompt, PromptBuilder, PromptStrategy, check_budget, passage_body,
    passage_heading,
)
from gallery_app.core.chat.repository import chat_participants
from gallery_app.core.chat.retrieval import ChatRetriever, Match, Retrieval
from gallery_app.core.chat.second_reading import SecondReading
from gallery_app.core.errors import AppError, Cancelled
from gallery_app.core.models.runtimes.embedders import TextEmbedder
from gallery_app.core.notes.matches import has_notes, note_matches

REWRITE_INSTRUCTIONS = (
    "Rewrite the last question so that it can be understood without the conversation before it. "
    "Replace words like it, that, there, he or she with what they refer to. "
    "Keep names, places, dates and amounts. Reply with the rewritten question only."
)


def merge_by_score(chat: Sequence[Match], notes: Sequence[Match], k: int, *, by_similarity: bool = False) -> list[Match]:
    """The ``k`` best of both sources. The notes' scores are z-scores on the chats' scale (``note_matches``), so
    they compare with the chat passages'; keyword fusion's scores are ranks, not z, so then the cosine
    similarity decides."""
    def key(match: Match) -> float:
        return match.similarity if by_similarity else match.score

    return sorted([*chat, *notes], key=key, reverse=True)[:k]


def check_question(question: str) -> None:
    """An empty question is the person's slip, not a search that found nothing."""
    if not question.strip():
        raise AppError("Type a question first: the question is empty.", hint="Nothing was searched.")


def check_passages(k: int) -> None:
    if k < 1:
        raise AppError(f"The model needs at least 1 passage to answer from; passages per question is {k}.",
                       hint="Nothing was asked. Set Passages per question in Settings, or --passages, to 1 or more.")


#: Note passages are scored on the chats' scale when both are asked (else each source on its own: measured
#: in README, "Notes and documents").
NOTES_ON_CHAT_SCALE = True

#: What a question searches: the chats, the notes folders, or both.
CHATS, NOTES = "chats", "notes"
EVERY_SOURCE = frozenset({CHATS, NOTES})


class ChatSession:
    def __init__(self, conn: apsw.Connection, embedder: TextEmbedder, llm: ChatModel | None = None,
                 options: AskOptions = AskOptions(),
                 *, chats: Sequence[int] | None = None, conversation: Conversation | None = None,
                 notes: Sequence[int] | None = None, sources: frozenset[str] = EVERY_SOURCE,
                 strategy: PromptStrategy | None = None, second_reading: SecondReading | None = None):
        """``conversation``: the turns so far, when they outlive this session (the window keeps one per
        conversation and asks each question with a new session); the session adds each answered turn to it.

        ``sources``: whether chats, notes or both are searched; ``chats`` / ``notes``: which chats and which
        notes folders (None: all of them). ``strategy``: how prompts are laid out, in place of the one
        ``options.instructions`` make. ``second_reading``: the model that reads the best passages again
        (``open_second_reading``), used when ``options.read_again``."""
        check_passages(options.passages)
        if llm is not None:
            check_budget(llm.n_ctx, options.answer_tokens)
        self.conn = conn
        self.options = options
        self.retriever = ChatRetriever(conn, embedder, use_keywords=options.use_keywords,
                                       rare_words=options.rare_words, by_language=options.by_language,
                                       second_reading=second_reading if options.read_again else None)
        self.llm = llm
        self.embedder = embedder
        self.chats = list(chats) if chats else None
        self.notes = list(notes) if notes else None
        self.sources = frozenset(sources)
        self.conversation = conversation if conversation is not None else Conversation()
        self.prompts = (PromptBuilder(llm, answer_tokens=options.answer_tokens, excerpts=options.excerpts,
                                      strategy=strategy or InstructionsStrategy(options.instructions))
                        if llm is not None else None)

    # --- follow-ups ---------------------------------------------------------------------------
    def rewrite_question(self, question: str) -> str:
        """The question made standalone by the LLM from the recent turns (unchanged without history)."""
        recent = self.conversation.recent[-2:]
        if not recent or self.llm is None:
            return question
        transcript = "\n".join(f"Q: {t.question}\nA: {t.answer}" for t in recent)
        request = f"Conversation:\n{transcript}\n\nLast question: {question}\n\nRewritten question:"
        if self.llm.chat_template is not None:
            text, stops = self.llm.render_chat([{"role": "system", "content": REWRITE_INSTRUCTIONS},
                                                {"role": "user", "content": request}])
        else:
            text, stops = f"{REWRITE_INSTRUCTIONS}\n\n{request}", ["\n"]
        rewritten = "".join(self.llm.stream_completion(self.llm.tokenize(text), max_tokens=48, stop=stops + ["\n"]))
        rewritten = rewritten.strip().strip('"').strip()
        # A rewrite that came back empty or rambling is worse than the baseline.
        if not rewritten or len(rewritten) > 4 * len(question) + 200:
            return f"{self.conversation.previous_question} {question}"
        return rewritten

    def follows_up(self, question: str) -> bool:
        """Whether ``question`` continues the previous turn: its words lean on it (``core.chat.follow_ups``),
        and that turn found passages in the chats asked now (another chat's turn is another subject)."""
        if self.conversation.previous_question is None or self.options.follow_ups is FollowUps.NONE:
            return False
        previous_chats = {match.chat_id for match in self.conversation.previous_matches if not match.is_note}
        if self.chats is not None and previous_chats and not previous_chats & set(self.chats):
            return False
        return is_follow_up(question)

    def search_query(self, question: str) -> str:
        previous = self.conversation.previous_question
        if not self.follows_up(question):
            return question
        if self.options.follow_ups in (FollowUps.PREVIOUS, FollowUps.NEIGHBOURHOOD):
            return f"{previous} {question}"
        return self.rewrite_question(question)

    # --- asking -------------------------------------------------------------------------------
    def retrieve(self, question: str) -> tuple[str, Retrieval]:
        """The passages for ``question`` as a turn of this conversation: (what was searched, retrieval)."""
        query = self.search_query(question)
        passages, min_score = self.options.passages, self.options.min_score
        if CHATS not in self.sources:
            found = Retrieval(query)
        elif self.options.follow_ups is FollowUps.NEIGHBOURHOOD and query != question:
            found = self.retriever.retrieve(question, k=passages, min_score=min_score, chats=self.chats,
                                            context_query=query, follow_up_of=self.conversation.previous_matches)
        else:
            found = self.retriever.retrieve(query, k=passages, min_score=min_score, chats=self.chats)
        if NOTES in self.sources and has_notes(self.conn):
            notes = note_matches(self.conn, self.embedder, query, passages, folder_ids=self.notes, min_score=min_score,
                                 scale=found.scale if NOTES_ON_CHAT_SCALE else None, rare_words=self.options.rare_words)
            found.matches = merge_by_score(found.matches, notes, passages, by_similarity=self.options.use_keywords)
        return query, found

    def ask(self, question: str, *, cancel: Callable[[], bool] | None = None) -> Iterator[AskEvent]:
        """Yields MatchesFound, a Status while the model is read, AnswerPieces, then the Answer; remembers the turn."""
        check_question(question)
        query, retrieval = self.retrieve(question)
        yield MatchesFound(retrieval, query, question)
        if not retrieval.matches or self.llm is None:
            text = self._nothing_found() if not retrieval.matches else ""
            if text:
                yield AnswerPiece(text)
            answer = Answer(question, query, retrieval, None, text)
        else:
            if not self.llm.loaded:
                # The passages are on screen; now the seconds it takes to read the weights.
                yield Status(StatusKind.LOADING_LLM)
                self.llm.count_tokens("warm up")
                if cancel is not None and cancel():
                    raise Cancelled()
            participants = chat_participants(self.conn, sorted({m.chat_id for m in retrieval.matches if not m.is_note}))
            # The turns before are replayed only to a follow-up: to another question they are noise.
            replayed = self.conversation if self.follows_up(question) else None
            prompt = self.prompts.build(question, retrieval.matches, replayed, participants)
            pieces: list[str] = []
            # Pieces are held back while the answer's start could still be chat log ("Maya: …"), which
            # must not reach the person even for the moment before it is replaced.
            held: list[str] | None = []
            for piece in self.llm.stream_completion(prompt.tokens, max_tokens=prompt.answer_tokens, stop=prompt.stop,
                                                    cancel=cancel):
                pieces.append(piece)
                if held is None:
                    yield AnswerPiece(piece)
                    continue
                held.append(piece)
                if continues_chat_log("".join(pieces), participants, finished=False) is False:
                    yield from map(AnswerPiece, held)
                    held = None
            answer = self._finish(question, query, retrieval, prompt, "".join(pieces).strip(), participants)
            if held and not answer.declined:
                yield from map(AnswerPiece, held)
        # The next prompt replays this turn: as a plain answer, without passage numbers it no longer shows.
        replayed = UNSUPPORTED if answer.declined else strip_markers(answer.text)
        self.remember(question, retrieval, replayed or NOTHING_FOUND)
        yield answer

    def _finish(self, question: str, query: str, retrieval: Retrieval, prompt: Prompt, raw: str,
                participants: Sequence[str]) -> Answer:
        """The answer to show: the model's, with its citations, or a plain decline and the closest message."""
        # Passage numbers are not evidence: "[2]" in the context must not make "2 nights" supported.
        headings = [passage_heading(match) for match in prompt.matches]
        # An empty answer says nothing, so "grounded" also means the model wrote something.
        grounding = check_answer(strip_markers(raw), strip_markers(prompt.context), question, participants,
                                 headings)
        if grounding.grounded and DONT_KNOW.lower() not in raw.lower():
            read = [passage_body(m, excerpts=self.prompts.excerpts) for m in prompt.matches]
            return Answer(question, query, retrieval, prompt, raw, raw, grounding, citations(raw, read))
        top = retrieval.matches[0]
        closest = None if top.is_note else closest_message(self.conn, top, question)
        nearest = closest.describe() if closest else closest_note_line(top)
        unsupported = UNSUPPORTED_PASSAGES if any(m.is_note for m in retrieval.matches) else UNSUPPORTED
        text = unsupported + (f"\n{nearest}" if nearest else "")
        return Answer(question, query, retrieval, prompt, text, raw, grounding, closest=closest, declined=True)

    def _nothing_found(self) -> str:
        """Said of what was searched: the chats, the notes folders, or both."""
        notes = NOTES in self.sources and has_notes(self.conn)
        if notes and CHATS in self.sources:
            return NOTHING_FOUND_IN_BOTH
        return NOTHING_FOUND_IN_NOTES if notes else NOTHING_FOUND

    def answer(self, question: str, **kwargs) -> Answer:
        """``ask`` without streaming: the finished Answer."""
        *_, final = self.ask(question, **kwargs)
        return final

    def remember(self, question: str, retrieval: Retrieval, answer: str) -> None:
        """Records a turn, with the passages it found, so the next question can follow up on it."""
        self.conversation.add(question, answer, retrieval.matches)

    def new_conversation(self) -> None:
        self.conversation.clear()
