"""Cutting a chat into passages for the embedder: bursts of one day, every line with its sender.

A passage is what the embedder sees and what the person is shown, so each line reads
``Name: text`` — including every line of a multi-line message and every part of a long
message that had to be split — and a passage never spans two days. Passages are budgeted
in the embedder's own tokens so none is silently truncated.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from itertools import groupby

from gallery_app.core.chat.whatsapp import is_placeholder

DEFAULT_CHUNK_TOKENS = 256
DEFAULT_WINDOW_MESSAGES = 4
DEFAULT_WINDOW_STRIDE = 4
#: A message with at least this many words (an announcement, a story) is also searched on its own.
DEFAULT_MESSAGE_WINDOW_WORDS = 40
#: A message longer than this (characters) is searched as groups of sentences of about this size.
DEFAULT_SENTENCE_WINDOW_CHARS = 280
#: At most this much of the message before a window is read with it (the end of a long one: its question).
LEAD_IN_CHARS = 140
#: How many of the other person's messages just before a window lead into it: a question is often
#: written as several short messages, and the reply answers all of them (within LEAD_IN_CHARS).
LEAD_IN_TURN_MESSAGES = 8
#: A window that would cut a person's turn (their consecutive messages) takes up to this many more messages
#: to finish it, else ends where that turn began: "¿Y a qué hora?" / "¿Y dónde?" stay together with the
#: reply after them (measured on the six real chats: docs/chat.md). Every window then carries the other
#: person's turn as lead-in (+6.5% tokens), which batching windows by token length paid for.
DEFAULT_FINISH_TURNS = 1
_SENTENCE_END = re.compile(r"(?<=[.!?…。！？])\s+|\n+")
_WORDS = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class ChunkInput:
    """The part of a stored message chunking needs."""

    id: int
    timestamp: datetime
    sender: str
    text: str
    #: Which of the export's pasted-together conversations it belongs to (core/chat/conversations.py).
    conversation: int = 0


@dataclass
class Chunk:
    day: date
    message_ids: list[int]
    senders: list[str]
    text: str
    tokens: int
    first_timestamp: datetime
    last_timestamp: datetime
    lines: list[str] = field(default_factory=list, repr=False)
    #: Per line, the id of the message it belongs to (None for the date line).
    line_owners: list[int | None] = field(default_factory=list, repr=False)
    #: Who wrote each message ("" for a system message).
    message_senders: dict[int, str] = field(default_factory=dict, repr=False)
    #: The message just before the passage in its conversation, as its sender and the ``Name: text`` read
    #: before the first window: a reply that opens a day ("Sekitar 8ribu an") answers what was asked the
    #: day before. None when there is none, or when it would not fit the embedder beside the passage.
    lead_in: tuple[str, str] | None = field(default=None, repr=False)

    def windows(self, config: "ChunkingConfig") -> list[tuple[list[int], str]]:
        """What the search compares a question with, at two grains, each ``(message ids, text)``.

        Windows of ``window_messages`` consecutive messages give short messages their context ("ok" →
        what was agreed); a message of ``message_window_words`` words or more is also a window of its
        own, and a long one (an announcement) a window per group of sentences, so one detail is not
        averaged away by the rest. Lines that are only emoji or symbols (game grids, reactions) are left
        out of every window: they cost embedder time and pull vectors towards each other. So can the
        digits of phone numbers be (``config.plain_mentions``, ``config.plain_number_senders``): windows
        of four "+62 838-2185-5356:" lines are near to each other and to nothing asked.
        """
        # Per searched line: its message, the sender as searched ("Name: " or ""), its text without it.
        kept: list[tuple[int | None, str, str]] = []
        for line, owner in zip(self.lines, self.line_owners):
            if owner is None:
                kept.append((owner, "", line))
                continue
            sender = self.message_senders.get(owner, "")
            body = searchable_text(self._body(line, owner)) if config.plain_mentions else self._body(line, owner)
            if is_noise(body):
                continue
            shown = sender if not config.plain_number_senders or not is_phone_number(sender) else ""
            kept.append((owner, f"{shown}: " if shown else "", body))
        owners = {owner for owner, _prefix, _body in kept if owner is not None}
        ids = [i for i in self.message_ids if i in owners]
        if not ids:
            return []
        windows: list[tuple[list[int], str]] = []
        seen: set[str] = set()

        def add(members: list[int], text: str) -> None:
            if text and text not in seen:
                seen.add(text)
                windows.append((members, text))

        lines = [(prefix + body, owner) for owner, prefix, body in kept]
        for members, text in self._consecutive_windows(ids, lines, config, self.message_senders):
            if config.lead_in:
                text = "\n".join(filter(None, (self._lead_in_before(members[0], ids, lines), text)))
            add(members, text)
        if config.message_window_words:
            for message_id in ids:
                own = [(prefix, body) for owner, prefix, body in kept if owner == message_id]
                body = "\n".join(body for _prefix, body in own)
                if len(_WORDS.findall(body)) < config.message_window_words:
                    continue
                if len(body) <= config.sentence_window_chars * 3 // 2:
                    add([message_id], "\n".join(prefix + line for prefix, line in own))
                else:
                    prefix = own[0][0]
                    for group in _sentence_groups(body, config.sentence_window_chars):
                        add([message_id], prefix + group)
        return windows

    def _lead_in_before(self, first: int, ids: list[int], lines: list[tuple[str, int | None]]) -> str:
        """The other person's turn before a window's first message, as the window's context (its tail, if
        long): a reply is read with what it replies to, while a message of the same sender's would only make
        the window a second home for what its own window already says."""
        position = ids.index(first)
        if position:
            # Its lines are the passage's, before the window's: together they fit wherever the passage does.
            before_sender = self.message_senders.get(ids[position - 1], "")
            wanted = set(ids[_turn_start(ids, self.message_senders, position):position])
            text = lead_in_text([line for line, owner in lines if owner in wanted], before_sender)
        elif self.lead_in is not None:
            before_sender, text = self.lead_in
        else:
            return ""
        return "" if before_sender == self.message_senders.get(first, "") else text

    def _body(self, line: str, owner: int) -> str:
        sender = self.message_senders.get(owner, "")
        return line[len(sender) + 2:] if sender and line.startswith(f"{sender}: ") else line

    @staticmethod
    def _consecutive_windows(ids: list[int], lines: list[tuple[str, int | None]], config: "ChunkingConfig",
                             senders: dict[int, str]) -> list[tuple[list[int], str]]:
        size, stride = config.window_messages, config.window_stride
        if config.finish_turns is not None and stride == size:
            bounds = _turn_windows(ids, senders, size, config.finish_turns)
        else:
            starts = list(range(0, max(1, len(ids) - size + stride), stride))
            if starts[-1] + size < len(ids):
                starts.append(len(ids) - size)  # the last messages get a window too
            elif len(starts) > 1 and starts[-1] + size > len(ids):
                starts[-1] = len(ids) - size  # a full last window: two messages alone have no context
            bounds = [(start, start + size) for start in starts]
        result = []
        for start, end in bounds:
            wanted = set(ids[start:end])
            text = "\n".join(line for line, owner in lines if owner is None or owner in wanted)
            result.append((ids[start:end], text))
        return result


@dataclass(frozen=True)
class ChunkingConfig:
    #: Budget per passage in the embedder's tokens (capped at the embedder's max_tokens).
    max_tokens: int = DEFAULT_CHUNK_TOKENS
    #: Start the passage with the day ("2024-05-03"): measured on the evaluation set (see docs).
    include_date: bool = False
    #: Also start a new passage after a pause this long within a day (None: only the day splits).
    max_gap_minutes: int | None = None
    #: Consecutive messages per window inside a passage, and how far each window moves on.
    window_messages: int = DEFAULT_WINDOW_MESSAGES
    window_stride: int = DEFAULT_WINDOW_STRIDE
    #: Windows one after the other keep a person's turn whole, finishing it with up to this many more
    #: messages or ending where it began (None: they end where the count falls; so do overlapping windows).
    finish_turns: int | None = DEFAULT_FINISH_TURNS
    #: Leave emoji grids out of passages (a message that is only emoji keeps its first line).
    trim_noise: bool = True
    #: Search without the digits of phone numbers (what is shown keeps them): an @-mention of a number
    #: ("@919439797508") without the mention, and a sender known only by number ("+62 838-2185-5356")
    #: without the name (measured: docs/chat.md).
    plain_mentions: bool = False
    plain_number_senders: bool = False
    #: Messages of at least this many words are windows of their own (0: consecutive messages only).
    message_window_words: int = DEFAULT_MESSAGE_WINDOW_WORDS
    #: Longer messages are searched as sentence groups of about this many characters.
    sentence_window_chars: int = DEFAULT_SENTENCE_WINDOW_CHARS
    #: Each window of consecutive messages is read after the message before it (in the passage, or the
    #: conversation's message before the passage), so a reply is searched with what it replies to.
    lead_in: bool = True


class TokenCounter:
    """Counts a passage's tokens from its lines without re-tokenising the whole passage each time."""

    def __init__(self, count_tokens: Callable[[str], int]):
        self._count = count_tokens
        # Prefix ("passage: ") and special tokens are paid once per passage, not once per line.
        self.overhead = count_tokens("")

    def line_cost(self, line: str) -> int:
        # +1 for the newline that joins it to the previous line (at most one token in every tokenizer we use).
        return max(1, self._count(line) - self.overhead) + 1

    def exact(self, text: str) -> int:
        return self._count(text)


#: WhatsApp sends at most 65,536 characters in one message; a longer "message" is a file pasted into the
#: export, searched by its first part (the chat viewer shows it whole). 5 MB in one line took 31 s and
#: 1.6 GB to cut into passages, and 5 MB of words over 10 minutes (issue 23).
SEARCHED_CHARS_PER_MESSAGE = 65_536
#: No word is longer: a longer run without spaces (a pasted key, a base64 blob) is cut into pieces of
#: this size before it is tokenised, so the tokenizer never sees one huge "word".
_LONGEST_WORD = 64


def message_lines(sender: str, text: str) -> list[str]:
    """``Name: text`` per line; a system message (no sender: "X changed the subject to …") reads as it is."""
    prefix = f"{sender}: " if sender else ""
    searched = text[:SEARCHED_CHARS_PER_MESSAGE]
    return [f"{prefix}{line.strip()}" for line in searched.split("\n") if line.strip()]


def is_oversized(text: str) -> bool:
    """Whether only the first ``SEARCHED_CHARS_PER_MESSAGE`` characters of a message are searched."""
    return len(text) > SEARCHED_CHARS_PER_MESSAGE


def passage_lines(sender: str, text: str) -> list[str]:
    """A message's lines as a passage shows them: without its emoji grids, unless that is all it is.

    "Woordle 218 3/6" stays and its grid of squares goes (the chat viewer still shows it); a
    reaction such as "😂😂" keeps its one line, so every message is still in its passage.
    """
    lines = message_lines(sender, text)
    prefix = len(f"{sender}: ") if sender else 0
    kept = [line for line in lines if not is_noise(line[prefix:])]
    return kept or lines[:1]


#: A sender saved by no name: WhatsApp shows the phone number ("+62 838-2185-5356", "+91 95882 56424").
_PHONE_NUMBER = re.compile(r"\+?\d[\d \-()\u00a0]{5,}\d")
#: An @-mention of a contact by number ("@919439797508"), which Android writes with isolate marks.
_NUMBER_MENTION = re.compile(r"@\u2068?\+?\d{6,}\u2069?")


def is_phone_number(sender: str) -> bool:
    return _PHONE_NUMBER.fullmatch(sender.strip("\u202a\u202c\u200e\u2068\u2069 ")) is not None


def searchable_text(text: str) -> str:
    """``text`` without @-mentions of phone numbers: a dozen digits that say nothing about what is asked."""
    return _NUMBER_MENTION.sub("", text).strip() if "@" in text else text


def is_noise(text: str) -> bool:
    """Emoji grids, emoji-only and symbol-only text: nothing a question could be matched with."""
    return not any(character.isalnum() for character in text)


#: A game's shared result: "Wordle 218 3/6", "Woordle6 14 X/6", "#Heardle #123", "Connections Puzzle #45".
_SCORE_TOKEN = re.compile(r"[\dXx]{1,2}/\d{1,2}\*?|#\d[\d,.]*")


#: A grid's row has at least this many symbols ("⬛🟨⬛⬛⬛", "⚪🟢🟢⚪"); a reaction ("😂😂") is no grid.
GRID_ROW_SYMBOLS = 3
#: A link as games share it, with or without its scheme ("polydle.github.io/?classic/daily/4").
_LINK_ONLY = re.compile(r"(?:https?://|www\.|[\w-]+(?:\.[\w-]+)+/)\S*")


#: A share that also gives a percentage: "#Worldle #42 6/6 (100%)".
_SCORE_SHARE = re.compile(r"\(?\d{1,3}(?:[.,]\d+)?%\)?")


def is_score_line(text: str) -> bool:
    """A line that is only a game's name, round and score (its grid of squares is noise): it answers nothing."""
    # An emoji after the score ("6/6 (100%) 🙈") says nothing either.
    tokens = [token for token in text.split() if not is_noise(token)]
    if not tokens or len(tokens) > 5 or not any(_SCORE_TOKEN.fullmatch(token) for token in tokens):
        return False
    words = [t for t in tokens if not _SCORE_TOKEN.fullmatch(t) and not _SCORE_SHARE.fullmatch(t)
             and not t.replace(",", "").replace(".", "").isdigit()]
    return len(words) <= 2 and all(len(word) <= 20 for word in words)


def carries_words(text: str) -> bool:
    """Whether a message says something a person reads as an answer: not a media or deleted-message
    placeholder, not only emoji grids, reactions or game scores (never highlighted as the answer)."""
    if is_placeholder(text):
        return False
    rows = text.split("\n")
    grid_end = _end_of_grid(rows)
    # A game's result is shared as its header, a grid and a link: only what follows the grid is a remark.
    lines = [line.strip() for line in rows[grid_end or 0:] if not is_noise(line)]
    said = [line for line in lines if not is_score_line(line)]
    if grid_end or len(said) < len(lines):
        # A shared result: its link, hashtag and lines without a letter (Polydle's "7 : 3&6&4&7") are part of it.
        said = [line for line in said if any(character.isalpha() for character in line)
                and not all(_LINK_ONLY.fullmatch(token) or token.startswith("#") for token in line.split())]
    return bool(said)


def _end_of_grid(rows: Sequence[str]) -> int | None:
    """Where the first grid of a game's shared result (two or more rows of squares, circles or other
    symbols, one under the other) ends in a message's rows; None when it has no grid."""
    run = 0
    for position, row in enumerate(rows):
        if len(row.strip()) >= GRID_ROW_SYMBOLS and is_noise(row):
            run += 1
        elif run >= 2:
            return position
        else:
            run = 0
    return len(rows) if run >= 2 else None


#: What may follow a question's mark at a message's end: spaces, more marks, emoji ("Had jij hem in 1? 😂").
_AFTER_LAST_WORD = re.compile(r"[\W_]*\Z", re.UNICODE)


def is_question(text: str) -> bool:
    """Whether a message ends by asking ("how much?", "Really?!", "apa ya kak?🙏", "¿Cuánto？"), so that
    it is not taken for the reply that answers."""
    tail = _AFTER_LAST_WORD.search(text).group()
    return "?" in tail or "\uff1f" in tail


def lead_in_text(lines: Sequence[str], sender: str) -> str:
    """A message's ``Name: text`` lines as a window's lead-in: at most about LEAD_IN_CHARS, from its end
    (where its question is); a line cut short keeps who wrote it ("Ana: …the dormitory free?")."""
    prefix = f"{sender}: " if sender else ""
    kept: list[str] = []
    room = LEAD_IN_CHARS
    for line in reversed(lines):
        if len(line) <= room:
            kept.insert(0, line)
            room -= len(line) + 1
            continue
        body = line[len(prefix):] if prefix and line.startswith(prefix) else line
        tail = body[len(body) - max(0, room - len(prefix) - 1):]
        tail = tail[tail.find(" ") + 1:] if " " in tail else tail
        if tail.strip():
            kept.insert(0, f"{prefix}…{tail}")
        break
    return "\n".join(kept)


def _sentence_groups(text: str, size: int) -> list[str]:
    """Consecutive sentences joined up to about ``size`` characters (a longer sentence stays whole)."""
    groups: list[str] = []
    for sentence in (part.strip() for part in _SENTENCE_END.split(text)):
        if not sentence or is_noise(sentence):
            continue
        if groups and len(groups[-1]) + 1 + len(sentence) <= size:
            groups[-1] += " " + sentence
        else:
            groups.append(sentence)
    return groups


def _split_long_line(line: str, sender: str, budget: int, line_cost: Callable[[str], int]) -> list[str]:
    """Split ``Name: very long text`` at sentence ends, else between words, else inside a word.

    ``line_cost`` is ``TokenCounter.line_cost``, best memoised: the same texts are tried more than once.
    """
    prefix = f"{sender}: " if sender else ""
    body = line[len(prefix):]
    pieces: list[str] = []
    for sentence in _SENTENCE_END.split(body):
        if line_cost(prefix + sentence) <= budget:
            pieces.append(sentence)
            continue
        current: list[str] = []
        words = (piece for word in sentence.split()
                 for piece in ((word,) if len(word) <= _LONGEST_WORD else
                               (word[i:i + _LONGEST_WORD] for i in range(0, len(word), _LONGEST_WORD))))
        for word in words:
            if current and line_cost(prefix + " ".join(current + [word])) > budget:
                pieces.append(" ".join(current))
                current = []
            current.append(word)
            while line_cost(prefix + " ".join(current)) > budget and len(current[0]) > 1:
                # A single "word" longer than the budget (a URL, a string of emoji): cut it in half.
                word = current.pop()
                half = max(1, len(word) // 2)
                pieces.append(" ".join(current + [word[:half]]).strip())
                current = [word[half:]]
        if current:
            pieces.append(" ".join(current))
    # Re-pack the pieces greedily so a long message does not turn into many tiny lines.
    packed: list[str] = []
    for piece in pieces:
        if packed and line_cost(prefix + packed[-1] + " " + piece) <= budget:
            packed[-1] += " " + piece
        else:
            packed.append(piece)
    return [prefix + piece for piece in packed if piece]


@dataclass
class _Draft:
    """A passage being filled: its lines and, per line, the message it came from (None for the date line)."""

    lines: list[str] = field(default_factory=list)
    owners: list[ChunkInput | None] = field(default_factory=list)
    cost: int = 0

    def add(self, line: str, owner: ChunkInput | None, cost: int) -> None:
        self.lines.append(line)
        self.owners.append(owner)
        self.cost += cost

    @property
    def has_messages(self) -> bool:
        return any(owner is not None for owner in self.owners)


def _finish(draft: _Draft, day: date, counter: TokenCounter, max_tokens: int) -> list[Chunk]:
    text = "\n".join(draft.lines)
    tokens = counter.exact(text)
    messages = [owner for owner in draft.owners if owner is not None]
    if tokens > max_tokens and len(messages) > 1:
        # The per-line estimate undercounted: split the passage in two rather than let the embedder truncate it.
        middle = len(draft.lines) // 2
        halves = (_Draft(draft.lines[:middle], draft.owners[:middle]), _Draft(draft.lines[middle:], draft.owners[middle:]))
        return [chunk for half in halves if half.has_messages for chunk in _finish(half, day, counter, max_tokens)]
    ids, senders = [], []
    for message in messages:
        if not ids or ids[-1] != message.id:
            ids.append(message.id)
        if message.sender and message.sender not in senders:
            senders.append(message.sender)
    return [Chunk(day, ids, senders, text, tokens, messages[0].timestamp, messages[-1].timestamp, list(draft.lines),
                  [owner.id if owner is not None else None for owner in draft.owners],
                  {message.id: message.sender for message in messages})]


def _day_drafts(messages: Sequence[ChunkInput], budget: int, counter: TokenCounter,
                config: ChunkingConfig) -> Iterator[_Draft]:
    header = messages[0].timestamp.date().isoformat() if config.include_date else None
    # Every line is tokenised once: its cost decides both whether it must be split and where it fits.
    header_cost = counter.line_cost(header) if header else 0

    def start() -> _Draft:
        draft = _Draft(cost=counter.overhead)
        if header:
            draft.add(header, None, header_cost)
        return draft

    room_for_text = budget - start().cost
    draft = start()
    previous_time: datetime | None = None
    for message in messages:
        lines: list[tuple[str, int]] = []
        for line in passage_lines(message.sender, message.text) if config.trim_noise else \
                message_lines(message.sender, message.text):
            cost = counter.line_cost(line)
            if cost > room_for_text:
                # Splitting tries overlapping texts, some twice, and its pieces are among them: memoise per line.
                piece_cost = functools.lru_cache(maxsize=None)(counter.line_cost)
                lines.extend((piece, piece_cost(piece))
                             for piece in _split_long_line(line, message.sender, room_for_text, piece_cost))
            else:
                lines.append((line, cost))
        if not lines:
            continue
        long_pause = (config.max_gap_minutes is not None and previous_time is not None
                      and (message.timestamp - previous_time).total_seconds() > config.max_gap_minutes * 60)
        previous_time = message.timestamp
        if long_pause and draft.has_messages:
            yield draft
            draft = start()
        for line, cost in lines:
            if draft.has_messages and draft.cost + cost > budget:
                yield draft
                draft = start()
            draft.add(line, message, cost)
    if draft.has_messages:
        yield draft


def chunk_messages(messages: Iterable[ChunkInput], count_tokens: Callable[[str], int], *, max_tokens: int,
                   config: ChunkingConfig = ChunkingConfig(), before: Iterable[ChunkInput] = ()) -> list[Chunk]:
    """Passages for ``messages`` (in chat order: by day, conversation, time), each within
    ``min(config.max_tokens, max_tokens)`` tokens. ``before``: the messages just before the first
    ones (of an earlier import), whose last per conversation is the lead-in of its first passage."""
    counter = TokenCounter(count_tokens)
    budget = min(config.max_tokens, max_tokens)
    if budget <= counter.overhead + 16:
        raise ValueError(f"A passage budget of {budget} tokens leaves no room for text.")
    chunks: list[Chunk] = []
    #: Per conversation, its last turn so far (one sender's last messages): the lead-in of its next passage.
    last_of: dict[int, list[ChunkInput]] = {message.conversation: [message] for message in before}
    for (day, conversation), group in groupby(messages, key=lambda m: (m.timestamp.date(), m.conversation)):
        for draft in _day_drafts(list(group), budget, counter, config):
            for chunk in _finish(draft, day, counter, max_tokens):
                previous = last_of.get(conversation)
                if config.lead_in and previous:
                    sender = previous[-1].sender
                    text = lead_in_text([line for message in previous for line in message_lines(sender, message.text)
                                         if not is_noise(line)], sender)
                    # Every window is a part of its passage, so one that fits beside the passage fits beside each.
                    if text and chunk.tokens + counter.line_cost(text) <= max_tokens:
                        chunk.lead_in = (sender, text)
                last_of[conversation] = _last_turn(draft, chunk)
                chunks.append(chunk)
    return chunks


def _turn_windows(ids: Sequence[int], senders: dict[int, str], size: int, extra: int) -> list[tuple[int, int]]:
    """Windows of about ``size`` messages, one after the other, as ``(start, end)`` positions in ``ids``: where
    ``size`` would cut a turn, the window takes up to ``extra`` more messages to finish it, else ends where the
    turn began (when that leaves it 2 messages or more; a longer turn is cut, as without turns)."""
    def sender(position: int) -> str:
        return senders.get(ids[position], "")

    bounds: list[tuple[int, int]] = []
    start = 0
    while start < len(ids):
        end = min(start + size, len(ids))
        if end < len(ids) and sender(end - 1) == sender(end):
            turn_end = end
            while turn_end < len(ids) and sender(turn_end) == sender(end - 1):
                turn_end += 1
            turn_start = _turn_start(ids, senders, end, longest=end - start)  # not before the window
            if turn_end - end <= extra:
                end = turn_end
            elif turn_start - start >= 2:
                end = turn_start
        bounds.append((start, end))
        start = end
    if len(bounds) > 1 and bounds[-1][1] - bounds[-1][0] < size:
        bounds[-1] = (max(0, len(ids) - size), len(ids))  # a full last window: two messages alone have no context
    return bounds


def _turn_start(ids: Sequence[int], senders: dict[int, str], end: int, longest: int = LEAD_IN_TURN_MESSAGES) -> int:
    """Where the turn that ends before ``ids[end]`` starts: ``ids[end - 1]``'s sender's messages just before
    it, at most ``longest`` of them."""
    sender = senders.get(ids[end - 1], "")
    start = end - 1
    while start > 0 and end - start < longest and senders.get(ids[start - 1], "") == sender:
        start -= 1
    return start


def _last_turn(draft: _Draft, chunk: Chunk) -> list[ChunkInput]:
    """The passage's last turn, in order: the lead-in of the next passage of its conversation."""
    owners = {owner.id: owner for owner in draft.owners if owner is not None}
    ids = chunk.message_ids
    return [owners[message_id] for message_id in ids[_turn_start(ids, chunk.message_senders, len(ids)):]]
