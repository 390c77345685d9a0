"""Finding the passages that answer a question.

Every window of the chats asked (a few consecutive messages, a long message alone, a group of its
sentences: see ``Chunk.windows``) is scored against the question, and a passage is as good as its
best window. Scores are taken relative to the question's own spread over the chat
(z-scores), because what a similarity of 0.82 means differs per embedder and per question; that
makes two more signals addable on one scale:

* a day or month the question names ("on 1 February", "in November 2016") lifts passages on
  that day (a little less on the day either side: "the night of 27 January" ends on the 28th);
* a follow-up is searched both alone and with the previous question, and passages close in time
  to the previous answer's best passages are lifted, because in a chat the answer to "and where
  were we supposed to meet?" sits within hours of the answer to "when was the photo shoot?".

Keyword search (SQLite FTS5, BM25) can be fused in by reciprocal rank fusion (off by default:
see docs/chat.md for the measurements).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path

import apsw
import numpy as np

from gallery_app.core.chat.answer_types import asks_for_an_amount, holds_a_number
from gallery_app.core.chat.ask_options import AskOptions
from gallery_app.core.chat.chunking import (DEFAULT_MESSAGE_WINDOW_WORDS, carries_words, is_phone_number, is_question,
                                            passage_lines, searchable_text)
from gallery_app.core.chat.language import guess_language
from gallery_app.core.chat.question_dates import DaySpan, asks_when, spans_in_question, spelled_day
from gallery_app.core.chat.repository import (
    chat_titles, chunks_by_id, messages_by_id, missing_window_vectors, passage_days, passage_times,
    passages_matching, window_count_and_newest, window_messages, window_similarities, window_texts,
)
from gallery_app.core.chat.second_reading import SecondReading
from gallery_app.core.models.runtimes.embedders import TextEmbedder
from gallery_app.core.rare_words import rare_word_lifts
from gallery_app.core.z_scores import z_scores

#: Messages either side of the best window that go into a match's excerpt.
EXCERPT_MARGIN = 1
RRF_K = 60
#: Lift (in standard deviations of the question's window scores) for a passage on a day the question
#: names, and on the day either side of it; a month lifts half as much, a year a quarter (the wider the span, the less
#: it says about one passage).
DATE_LIFT = 2.0
DATE_NEAR_LIFT = 1.0
#: A language needs this many windows to be scored on its own scale.
MIN_LANGUAGE_WINDOWS = 30
#: Messages before this hour count for the day before too, when a question names a day.
NIGHT_ENDS = timedelta(hours=5)
#: Lift for a follow-up's passages within NEAR_HOURS of the previous answer's best passages.
FOLLOW_UP_LIFT = 0.75
NEAR_HOURS = 6
#: The previous turn's passages whose neighbourhood counts (its best first).
FOLLOW_UP_ANCHORS = 2
#: Hub suppression (CSLS): a window's similarity counts less by this share of its mean similarity to
#: its HUB_NEIGHBOURS nearest other windows, so a window near to everything stops topping every question.
HUB_WEIGHT = 0.0
HUB_NEIGHBOURS = 10
#: Each window also read as part of its passage: scored as if its vector had been moved this much towards its
#: passage's centroid (``repository.window_similarities``); the window's own similarity stays what is shown and
#: what ``min_score`` compares. Off: over the six real chats 0.3 lifts the first stage alone (mean R@3 0.72 ->
#: 0.75, no set down) but, read again, the mean falls 0.79 -> 0.77 (hi13 pushed past the passages read), and
#: unread, "Who created this group?" no longer finds WhatsApp's own line in the admissions chat (docs/chat.md).
PASSAGE_CONTEXT = 0.0
#: The best this many passages name their answering message: their messages are compared with the question
#: one by one (what the person reads first, highlighted and quoted). As many as the window shows by default,
#: so no card highlights a whole window (embedding six passages' messages costs about 0.1 s more than
#: their best windows' on 2 cores).
ANSWER_MESSAGE_PASSAGES = 6
#: A passage's answering message is chosen from all its messages, those of its best window lifted by this
#: much similarity: the reply that answers often sits just beside the window that was found ("latex" one
#: message before "Google docs igual / Y google sheets / tmbn"). Over the six real chats evidence@1 0.36 ->
#: 0.40 with the first stage alone, every lift from 0.005 to 0.04 above the window alone (docs/chat.md).
ANSWER_WINDOW_LIFT = 0.01
#: A follow-up's answering message is also judged against the question with the one before it.
ANSWER_BY_CONTEXT = False
#: Among this many best passages, one whose best window repeats a better one's text (a broadcast pasted again)
#: is left out (0: kept), so the cards and the second reading hold that many different passages.
COLLAPSE_DEPTH = 60
#: A question that asks for an amount ("How much…", "¿Cuántos…", "Berapa…") lifts, among the best AMOUNT_DEPTH
#: passages, those whose best window has a message with a number in it (``answer_types``), by this many standard
#: deviations. Over the six real chats mean R@3 0.783 -> 0.790 (en09, the SUV's price, 4th -> top 3), no set
#: down, R@1 and evidence@1 unchanged (docs/chat.md).
AMOUNT_LIFT = 0.5
AMOUNT_DEPTH = 60
#: The second reading reads each excerpt under its day ("Saturday 29 January 2022", as its card heads it): 2 for a
#: question that names a day or asks when (the default), 1 always, 0 never. For a question about time the day is
#: what the reader must weigh ("And when was it held last year?"); read always, it moved R@1 and evidence@1 down
#: one question in three sets. Over the six real chats mean R@3 0.776 -> 0.783, follow-ups 0.64 -> 0.71, no set
#: down, R@1 and evidence@1 unchanged (docs/chat.md).
READ_WITH_DAY = 2
#: The second reading reads a sender saved by no name as "Member A", "Member B"… (in the order they speak in the
#: excerpt), and messages without @-mentions of numbers: "+62 821-8391-2420: " is a dozen tokens that say nothing
#: the question asks, on every line of a helpdesk's or an admissions group's excerpt. Over the six real chats R@3
#: unchanged on every set, R@1 0.558 -> 0.565 and evidence@1 0.44 -> 0.45 (Indonesian helpdesk 0.57 -> 0.61 and
#: 0.52 -> 0.57), no set down; that chat's excerpts read in 0.79 x the time (152 -> 91 tokens; docs/chat.md).
#: The card and the answering model still see the numbers: they are who wrote what.
READ_PLAIN_NUMBERS = True
#: A second stage: the best RERANK_DEPTH passages looked at again message by message, each passage
#: lifted by RERANK_WEIGHT x the z-score of its message nearest the question. Off: over the six real
#: chats (depth 30, weight 0.5) it lifts mean R@3 0.63 -> 0.65 (3 of 139 questions), R@1 and
#: evidence@1 unchanged, and embeds some 300 messages a question, 2-6 s on 2 cores (docs/chat.md).
RERANK_DEPTH = 0
RERANK_WEIGHT = 0.5
_WORD = re.compile(r"\w{3,}", re.UNICODE)


@dataclass(frozen=True)
class NoteSource:
    """Where a note passage comes from: its file, the headings above it and its page (``Match.note``)."""

    folder_id: int
    file_id: int
    path: Path
    relative_path: str
    kind: str | None
    heading_path: tuple[str, ...]
    page: int | None
    #: The passage's span in the document's text.
    start: int
    end: int
    #: Indexes of the passage's lines that answer best (highlighted), from 0.
    best_lines: tuple[int, ...] = ()

    @property
    def location(self) -> str:
        """"Brewing gear › Grinders, page 3", "page 3", or the file's name when it has neither."""
        where = " › ".join(self.heading_path)
        page = f"page {self.page}" if self.page is not None else ""
        return ", ".join(part for part in (where, page) if part) or Path(self.relative_path).name


@dataclass(frozen=True)
class Match:
    """A passage found for a question: a chat's (``note`` None) or a note's.

    For a note, ``chunk_id`` is the note chunk's id (its own numbering: ``key`` tells the two apart),
    ``chat_id`` is None, ``chat_title`` the note's title and ``day`` where in it the passage is
    (``NoteSource.location``), so that every place that heads a passage with its chat and day heads a
    note passage with its title and place."""

    chunk_id: int
    chat_id: int | None
    chat_title: str
    day: str
    senders: list[str]
    text: str
    message_ids: list[int]
    #: Cosine similarity of the passage's best window to the query (1 − cosine distance).
    similarity: float
    #: The score the matches are ordered by.
    score: float
    #: The messages of the best-matching window: what to highlight, and the core of the LLM's context.
    focus_message_ids: list[int] = field(default_factory=list)
    #: ``Name: text`` lines of the focus window and one message either side (within the passage).
    excerpt: str = ""
    #: The one message of the focus window that reads most like the answer (None: not chosen).
    answer_message_id: int | None = None
    #: For a note passage: its file, headings and page.
    note: NoteSource | None = None

    @property
    def key(self) -> tuple[str, int]:
        """Unique among a retrieval's matches (chat and note passages are numbered apart)."""
        return ("note" if self.note is not None else "chat", self.chunk_id)

    @property
    def is_note(self) -> bool:
        return self.note is not None


@dataclass
class Retrieval:
    query: str
    matches: list[Match] = field(default_factory=list)
    #: Passages the current embedder has not embedded (searching them needs a re-index).
    unindexed: int = 0
    #: Days the question named, as read from it.
    spans: list[DaySpan] = field(default_factory=list)
    #: Mean and spread of the question's similarity over the chat windows searched: the scale of the chat
    #: passages' scores, on which another source's passages can be scored (None: no chat was searched).
    scale: tuple[float, float] | None = None
    #: What a person should know about this search (a step that was skipped), one sentence each.
    notices: list[str] = field(default_factory=list)

    @property
    def passage_count(self) -> int:
        return len(self.matches)

    @property
    def chat_count(self) -> int:
        return len({match.chat_id for match in self.matches if match.note is None})

    @property
    def note_count(self) -> int:
        """How many notes (files, or lines of a ``.jsonl``) the passages come from."""
        return len({(match.note.file_id, match.chat_title) for match in self.matches if match.note is not None})

    def describe(self) -> str:
        """"Found 5 passages in 2 chats and 1 note"."""
        if not self.matches:
            return "No passages found."
        passages = "passage" if self.passage_count == 1 else "passages"
        sources = [f"{count} {word}{'' if count == 1 else 's'}"
                   for count, word in ((self.chat_count, "chat"), (self.note_count, "note")) if count]
        return f"Found {self.passage_count} {passages} in {' and '.join(sources)}"


def fts_query(text: str) -> str | None:
    """An FTS5 query matching any word of ``text`` (quoted, so no word can act as FTS syntax)."""
    words = list(dict.fromkeys(word.lower() for word in _WORD.findall(text)))
    return " OR ".join(f'"{word}"' for word in words) or None


@dataclass
class _Scored:
    """Per passage of the chats searched: its best window, that window's similarity, and its score."""

    chunk_ids: np.ndarray
    best_window: np.ndarray
    similarity: np.ndarray
    score: np.ndarray
    days: np.ndarray
    #: Mean and spread of the question's similarity over every window searched (its z-scores' scale).
    scale: tuple[float, float] = (0.0, 1.0)


_LANGUAGES: dict[tuple, dict[int, str]] = {}


def _window_languages(conn: apsw.Connection, window_ids: np.ndarray) -> np.ndarray:
    """Each window's language guess, cached per database and set of windows (they change only on import)."""
    key = (conn.filename, *window_count_and_newest(conn))
    if key not in _LANGUAGES:
        _LANGUAGES.clear()  # one database at a time in practice; never grows
        _LANGUAGES[key] = {window_id: guess_language(text) for window_id, text in window_texts(conn).items()}
    languages = _LANGUAGES[key]
    return np.array([languages.get(int(r), "") for r in window_ids], dtype=object)


class ChatRetriever:
    def __init__(self, conn: apsw.Connection, embedder: TextEmbedder, *, use_keywords: bool = AskOptions.use_keywords,
                 rare_words: bool = AskOptions.rare_words, by_language: bool = AskOptions.by_language,
                 second_reading: SecondReading | None = None):
        self.conn = conn
        self.second_reading = second_reading
        self.by_language = by_language
        self.embedder = embedder
        self.use_keywords = use_keywords
        self.rare_words = rare_words
        self._unindexed: int | None = None
        self._times: dict[int, tuple[datetime, datetime]] | None = None

    # --- scoring ------------------------------------------------------------------------------
    def _score(self, queries: np.ndarray, chats: Sequence[int] | None) -> _Scored | None:
        found = window_similarities(self.conn, self.embedder, queries, chats,
                                    hubness_k=HUB_NEIGHBOURS if HUB_WEIGHT else 0, passage_weight=PASSAGE_CONTEXT)
        if found is None:
            return None
        window_ids, window_scores = found.window_ids, found.in_passage
        if HUB_WEIGHT:
            window_scores = window_scores - HUB_WEIGHT * found.hubness[:, None]
        # Each query's scores on its own scale; a window counts by the query that found it best.
        if self.by_language:
            combined = self._z_by_language(window_ids, window_scores).max(axis=1)
        else:
            combined = z_scores(window_scores).max(axis=1)
        raw = found.scores.max(axis=1)
        chunk_of_window = found.chunk_ids
        # Best window per passage: sort windows by passage, then by score within it; the last of each run wins.
        order = np.lexsort((combined, chunk_of_window))
        last_of_run = np.r_[chunk_of_window[order][1:] != chunk_of_window[order][:-1], True]
        best = order[last_of_run]
        first = found.scores[:, 0]
        return _Scored(chunk_of_window[best], window_ids[best], raw[best], combined[best].astype(np.float64),
                       found.days[best], (float(first.mean()), float(first.std()) or 1.0))

    def _z_by_language(self, window_ids: np.ndarray, window_scores: np.ndarray) -> np.ndarray:
        """z-scores within each language's windows: a question scores every window in its own language
        higher than any in another, so the best Spanish message must be compared with Spanish ones."""
        languages = _window_languages(self.conn, window_ids)
        z = z_scores(window_scores)
        for language in set(languages.tolist()):
            members = languages == language
            if members.sum() >= MIN_LANGUAGE_WINDOWS:
                z[members] = z_scores(window_scores[members])
        return z

    def _chunk_times(self) -> dict[int, tuple[datetime, datetime]]:
        if self._times is None:
            self._times = passage_times(self.conn)
        return self._times

    def _lift_named_days(self, scored: _Scored, spans: Sequence[DaySpan]) -> None:
        times = self._chunk_times()
        # A conversation that starts after midnight belongs to the evening before: "the puzzle of
        # 25 January" is solved at 00:25 on the 26th.
        days = [(date.fromisoformat(day), (times[c][0] - NIGHT_ENDS).date() if c in times else date.fromisoformat(day))
                for c, day in zip(scored.chunk_ids.tolist(), scored.days)]
        lift = np.zeros(len(days))
        for span in spans:
            # The wider the span, the less it says about one passage: a day, a month, a year.
            length = (span.last - span.first).days
            weight = 1.0 if length < 7 else 0.5 if length < 32 else 0.25
            distance = np.array([min(span.distance(day), span.distance(evening)) for day, evening in days])
            lift = np.maximum(lift, weight * np.where(distance == 0, DATE_LIFT,
                                                      np.where(distance == 1, DATE_NEAR_LIFT, 0.0)))
        scored.score += lift

    def _lift_neighbourhood(self, scored: _Scored, anchors: Sequence[Match]) -> None:
        times = self._chunk_times()
        near = timedelta(hours=NEAR_HOURS)
        anchor_times = [times[m.chunk_id] for m in anchors[:FOLLOW_UP_ANCHORS] if m.note is None and m.chunk_id in times]
        if not anchor_times:
            return
        lift = np.zeros(len(scored.chunk_ids))
        for position, chunk_id in enumerate(scored.chunk_ids.tolist()):
            first, last = times.get(chunk_id, (None, None))
            if first is None:
                continue
            if any(last >= start - near and first <= end + near for start, end in anchor_times):
                lift[position] = FOLLOW_UP_LIFT
        scored.score += lift

    # --- keywords -----------------------------------------------------------------------------
    def _lift_rare_words(self, scored: _Scored, question: str, chats: Sequence[int] | None) -> None:
        """Lift passages sharing a rare word with the question ("hannahmariepark", "Absurdle", "Sampras"):
        ``core/rare_words.py``, judged among the passages of the chats asked."""
        scored.score += rare_word_lifts(
            question, scored.chunk_ids,
            lambda query, limit: passages_matching(self.conn, query, chats, limit, by_rank=False))

    def _keyword_ranking(self, question: str, limit: int, chats: Sequence[int] | None) -> list[int]:
        query = fts_query(question)
        return [] if query is None else passages_matching(self.conn, query, chats, limit, by_rank=True)

    # --- what the person is shown -------------------------------------------------------------
    def _excerpt(self, passage_ids: list[int], focus_ids: list[int], *, plain_numbers: bool = False) -> str:
        """The focus messages and one either side, as ``Name: text`` lines; with ``plain_numbers`` (for the
        reader, READ_PLAIN_NUMBERS) a sender saved by no name is "Member A", "Member B"… and @-mentions of numbers
        are left out."""
        positions = [passage_ids.index(i) for i in focus_ids if i in passage_ids]
        if not positions:
            return ""
        first, last = max(0, min(positions) - EXCERPT_MARGIN), max(positions) + EXCERPT_MARGIN + 1
        messages = messages_by_id(self.conn, passage_ids[first:last])
        members: dict[str, str] = {}

        def name(sender: str) -> str:
            if not plain_numbers or not is_phone_number(sender):
                return sender
            return members.setdefault(sender, f"Member {chr(ord('A') + len(members))}")

        # As passages show them: a game's grid of squares is not read by the model nor shown on a card.
        return "\n".join(line for m in messages
                         for line in passage_lines(name(m.sender or ""),
                                                   searchable_text(m.text) if plain_numbers else m.text))

    def retrieve(self, question: str, k: int = 4, min_score: float = 0.0, chats: Sequence[int] | None = None, *,
                 context_query: str | None = None, follow_up_of: Sequence[Match] = ()) -> Retrieval:
        """The ``k`` passages that best answer ``question``, best first, none below ``min_score`` similarity.

        ``context_query`` (e.g. the previous question and this one) is searched too, and passages
        near ``follow_up_of`` (the previous turn's matches) are lifted: for follow-up questions.
        """
        if self._unindexed is None:
            # Counting a vec0 table scans it; once per session is enough (imports make new sessions).
            self._unindexed = missing_window_vectors(self.conn, self.embedder)
        result = Retrieval(question, unindexed=self._unindexed)
        if not question.strip() or k <= 0:
            return result
        texts = [question] + ([context_query] if context_query and context_query != question else [])
        queries = np.stack([self.embedder.embed_query(text) for text in texts])
        scored = self._score(queries, chats)
        if scored is None:
            return result
        result.scale = scored.scale
        chat_days = passage_days(self.conn, chats)
        # A follow-up without a date of its own ("and who got it right?") is about the previous one's.
        result.spans = (spans_in_question(question, *chat_days)
                        or (spans_in_question(context_query, *chat_days) if context_query else []))
        if result.spans:
            self._lift_named_days(scored, result.spans)
        if follow_up_of:
            self._lift_neighbourhood(scored, follow_up_of)
        if self.rare_words:
            self._lift_rare_words(scored, question, chats)
        eligible = np.flatnonzero(scored.similarity >= min_score)
        ranked = eligible[np.argsort(-scored.score[eligible], kind="stable")]
        if AMOUNT_LIFT and asks_for_an_amount(question):
            ranked = self._lift_amounts(ranked, scored)
        if RERANK_DEPTH:
            ranked = self._rerank_by_messages(ranked, scored, queries[:1])
        if COLLAPSE_DEPTH:
            ranked = self._without_repeats(ranked, scored)
        if self.second_reading is not None:
            ranked = self._read_again(ranked, scored, question, result)
        if self.use_keywords:
            limit = max(4 * k, 20)
            fused: dict[int, float] = {}
            position_of = {int(c): p for p, c in enumerate(scored.chunk_ids.tolist())}
            vector_ranking = [int(scored.chunk_ids[p]) for p in ranked[:limit]]
            for ranking in (vector_ranking, self._keyword_ranking(question, limit, chats)):
                for rank, chunk_id in enumerate(ranking):
                    if chunk_id in position_of:
                        fused[chunk_id] = fused.get(chunk_id, 0.0) + 1.0 / (RRF_K + rank + 1)
            chosen_positions = [position_of[c] for c in sorted(fused, key=lambda c: -fused[c])
                                if scored.similarity[position_of[c]] >= min_score][:k]
            final_score = {position_of[c]: fused[c] for c in fused}
        else:
            chosen_positions = ranked[:k].tolist()
            final_score = {p: float(scored.score[p]) for p in chosen_positions}
        chosen = [int(scored.chunk_ids[p]) for p in chosen_positions]
        chunks = chunks_by_id(self.conn, chosen)
        focus = window_messages(self.conn, [int(scored.best_window[p]) for p in chosen_positions])
        titles = chat_titles(self.conn)
        focus_of = [focus.get(int(scored.best_window[position]), []) for position in chosen_positions]
        answers = self._answer_messages(queries if ANSWER_BY_CONTEXT else queries[:1], focus_of,
                                        [chunks[chunk_id].message_ids for chunk_id in chosen[:ANSWER_MESSAGE_PASSAGES]])
        for number, (position, chunk_id) in enumerate(zip(chosen_positions, chosen)):
            chunk = chunks[chunk_id]
            answer, focus_ids = answers[number] if number < len(answers) else (None, focus_of[number])
            result.matches.append(Match(chunk_id, chunk.chat_id, titles.get(chunk.chat_id, ""), chunk.day,
                                        chunk.senders, chunk.text, chunk.message_ids,
                                        float(scored.similarity[position]), final_score[position], focus_ids,
                                        self._excerpt(chunk.message_ids, focus_ids), answer))
        return result

    def _best_windows_said(self, positions: np.ndarray, scored: _Scored) -> list[list[str]]:
        """Per passage at ``positions``, the texts of its best window's messages that say something
        (``carries_words``: no placeholders, no bare game scores)."""
        windows = [int(scored.best_window[p]) for p in positions]
        members = window_messages(self.conn, windows)
        texts = {m.id: m.text for m in messages_by_id(self.conn, sorted({i for ids in members.values() for i in ids}))}
        return [[texts[i] for i in members.get(window, []) if i in texts and carries_words(texts[i])]
                for window in windows]

    def _lift_amounts(self, ranked: np.ndarray, scored: _Scored) -> np.ndarray:
        """``ranked`` with its first passages lifted by AMOUNT_LIFT where their best window says a number."""
        top = ranked[:AMOUNT_DEPTH]
        for position, said in zip(top.tolist(), self._best_windows_said(top, scored)):
            if any(holds_a_number(text) for text in said):
                scored.score[position] += AMOUNT_LIFT
        return np.concatenate([top[np.argsort(-scored.score[top], kind="stable")], ranked[len(top):]])

    def _without_repeats(self, ranked: np.ndarray, scored: _Scored) -> np.ndarray:
        """``ranked`` without a passage whose best window says what a better one's did (a broadcast pasted
        again, by anyone): the person would read it twice, and it takes a place another passage could have."""
        top = ranked[:COLLAPSE_DEPTH]
        seen: set[tuple[str, ...]] = set()
        kept = []
        for position, texts in zip(top.tolist(), self._best_windows_said(top, scored)):
            said = tuple(" ".join(text.split()).casefold() for text in texts)
            if said and said in seen:
                continue
            seen.add(said)
            kept.append(position)
        return np.concatenate([np.asarray(kept, dtype=ranked.dtype), ranked[len(top):]])

    def _read_again(self, ranked: np.ndarray, scored: _Scored, question: str, result: Retrieval) -> np.ndarray:
        """``ranked`` with its first passages reordered by a language model's reading of their excerpts
        (``core/chat/second_reading.py``). They keep their scores in the new order, so that the scores
        still rank them, on the scale notes are merged on."""
        top = ranked[:self.second_reading.depth]
        if len(top) < 2:
            return ranked
        windows = [int(scored.best_window[p]) for p in top]
        focus = window_messages(self.conn, windows)
        chunks = chunks_by_id(self.conn, [int(scored.chunk_ids[p]) for p in top])
        with_day = READ_WITH_DAY == 1 or (READ_WITH_DAY == 2 and bool(result.spans or asks_when(question)))
        excerpts = []
        for position, window in zip(top.tolist(), windows):
            chunk = chunks[int(scored.chunk_ids[position])]
            excerpt = self._excerpt(chunk.message_ids, focus.get(window, []), plain_numbers=READ_PLAIN_NUMBERS)
            excerpts.append(f"{spelled_day(date.fromisoformat(chunk.day))}\n{excerpt}" if with_day else excerpt)
        order = self.second_reading.reorder(scored.score[top], excerpts, question)
        if order is None:
            result.notices.append("The second reading of the passages failed, so they are in the first search's order.")
            return ranked
        reordered = top[order]
        scored.score[reordered] = np.sort(scored.score[top])[::-1]
        return np.concatenate([reordered, ranked[len(top):]])

    def _rerank_by_messages(self, ranked: np.ndarray, scored: _Scored, queries: np.ndarray) -> np.ndarray:
        """``ranked`` with its first RERANK_DEPTH passages reordered by window and best single message.

        A window of four messages can be found for its chatter and miss the one reply that answers; each
        message alone is a finer look. Messages long enough to be windows of their own are left out: they
        were scored alone already, and they are most of the cost.
        """
        top = ranked[:RERANK_DEPTH]
        if len(top) < 2:
            return ranked
        chunks = chunks_by_id(self.conn, [int(scored.chunk_ids[p]) for p in top])
        by_id = {m.id: m for m in messages_by_id(self.conn, sorted({i for c in chunks.values() for i in c.message_ids}))}
        texts, owners = [], []
        for number, position in enumerate(top.tolist()):
            for message_id in chunks[int(scored.chunk_ids[position])].message_ids:
                message = by_id.get(message_id)
                if (message is not None and message.sender and carries_words(message.text)
                        and len(message.text.split()) < DEFAULT_MESSAGE_WINDOW_WORDS):
                    texts.append(f"{message.sender}: {message.text}")
                    owners.append(number)
        if not texts:
            return ranked
        nearest = z_scores((self.embedder.embed_passages(texts) @ queries.T).max(axis=1))
        # A passage with no short message is neither lifted nor lowered.
        best = np.full(len(top), -np.inf)
        np.maximum.at(best, np.asarray(owners), nearest)
        best[np.isinf(best)] = 0.0
        combined = z_scores(scored.score[top]) + RERANK_WEIGHT * best
        return np.concatenate([top[np.argsort(-combined, kind="stable")], ranked[RERANK_DEPTH:]])

    def _answer_messages(self, queries: np.ndarray, focus_windows: list[list[int]],
                         passages: Sequence[list[int]]) -> list[tuple[int | None, list[int]]]:
        """Per focus window (one per passage, ``passages``), the passage's message that answers and the
        messages what is shown and read centres on.

        A window is found because it is about what was asked; which message answers is a second, finer
        look: each alone, in the embedder's space, the window's own preferred by ANSWER_WINDOW_LIFT. A
        question in the chat ("how much is the room?") is nearer to the question than its answer is, so it
        is passed over when there is anything else. The focus is the window and the answer beside it; a
        window of game scores or placeholders only (found for what the message before it says) is left out
        of the focus, which centres on the passage's message that answers instead.
        """
        wanted = {i for ids in focus_windows for i in ids} | {i for ids in passages for i in ids}
        by_id = {m.id: m for m in messages_by_id(self.conn, sorted(wanted))}

        def written(ids: list[int]) -> list:
            return [by_id[i] for i in ids if i in by_id and by_id[i].can_answer]

        # A game score, an emoji grid or "<Media omitted>" is never the answer when the passage says more.
        candidates = [[m for m in written(passage) if carries_words(m.text)] or written(window)
                      for window, passage in zip(focus_windows, passages)]
        texts = [f"{m.sender}: {m.text}" if m.sender else m.text for messages in candidates for m in messages]
        if not texts:
            return [(None, window) for window in focus_windows[:len(passages)]]
        # A follow-up's message is judged by the question alone or with the one before, whichever is nearer.
        similarity = iter((self.embedder.embed_passages(texts) @ queries.T).max(axis=1).tolist())
        chosen: list[tuple[int | None, list[int]]] = []
        for window, messages in zip(focus_windows, candidates):
            members = set(window)
            scored = [(next(similarity) + (ANSWER_WINDOW_LIFT if m.id in members else 0.0), m) for m in messages]
            answers = [pair for pair in scored if not is_question(pair[1].text)] or scored
            answer = max(answers, key=lambda pair: pair[0])[1].id if answers else None
            if answer is None or answer in members:
                chosen.append((answer, window))
            else:
                # The answer came from the passage's messages that say something: the window is shown with it
                # when some of its own are among them, and gives way to it when it held only scores.
                window_says = any(m.id in members for m in messages)
                chosen.append((answer, [*window, answer] if window_says else [answer]))
        return chosen
