"""Cutting a note into chunks for the embedder: within its token budget, one section each, never mid-word.

A chunk is what the embedder sees and what the person is shown. Its text is an exact span of the
document's text (``NoteDocument.text[start:end]``), so a viewer can show it in place; what is embedded
is that text after a context line, ``Title › Heading › Subheading, page 3``, the way every chat line
keeps ``Name:``: a bullet list under "Brewing gear" means little without the heading it sits under.
A document's first chunk also carries its front matter (``pages: 528``), which may be all it says.

Chunks are budgeted in the embedder's own tokens (``TextEmbedder.count_tokens``), at the chat
passages' 256 (``chat/chunking.DEFAULT_CHUNK_TOKENS``, measured there; it is also MiniLM's whole
window, and e5 was trained on passages of that size), capped at the embedder's ``max_tokens``, so none
is silently truncated. A chunk never spans two pages. Consecutive short sections that fit one chunk
together are one (under the headings they share; their own heading lines are in the text): on
notes_qa, one chunk per section made 559 chunks of 96 tokens on average, half under 64, and found the
right note but the wrong few lines; together, 349 chunks and R@3 0.78 → 0.93 with e5 (192 and 384
tokens: 0.93 too). A long section is cut alone, at blank lines, else line ends, else sentence ends,
else between words; only a single "word" longer than the budget (a pasted key, a URL) is cut inside.
Consecutive chunks of one section share their boundary line or sentence when it is short
(``overlap_tokens``), so an answer that sits on a cut is whole in one of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from gallery_app.core.chat.chunking import DEFAULT_CHUNK_TOKENS, TokenCounter
from gallery_app.core.notes.documents import NoteDocument, NoteSection

#: A repeated boundary unit may take this many tokens (about a tenth of a chunk).
DEFAULT_OVERLAP_TOKENS = 32
#: The context line keeps at most this share of the budget; a longer one is shortened.
CONTEXT_SHARE = 0.25
#: Front matter values longer than this (characters) are cut: a list of fifty tags says little.
PROPERTY_VALUE_CHARS = 120
HEADING_SEPARATOR = " › "

_BLANK_LINES = re.compile(r"\n[ \t\r\f\v]*\n\s*")
_LINE_ENDS = re.compile(r"\n\s*")
_SENTENCE_ENDS = re.compile(r"(?<=[.!?…。！？;])\s+")
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class NoteChunkingConfig:
    #: Budget per chunk in the embedder's tokens, context line included (capped at its ``max_tokens``).
    max_tokens: int = DEFAULT_CHUNK_TOKENS
    overlap_tokens: int = DEFAULT_OVERLAP_TOKENS
    #: Consecutive short sections of a page share a chunk when they fit it together.
    merge_sections: bool = True


@dataclass(frozen=True)
class NoteChunk:
    """One chunk of a file: ``text`` is ``documents[document].text[start:end]``; ``embedded`` is what the
    embedder reads."""

    #: Which of the file's documents (0-based), and that document's ``part`` (a ``.jsonl`` line number).
    document: int
    part: int | None
    #: Position among the file's chunks, from 0.
    ordinal: int
    title: str
    heading_path: tuple[str, ...]
    page: int | None
    #: The context line (and, in a document's first chunk, its front matter), embedded before ``text``.
    context: str
    text: str
    start: int
    end: int
    #: Tokens of ``embedded``, prefix and special tokens included.
    tokens: int

    @property
    def embedded(self) -> str:
        return embedded_text(self.context, self.text)


def embedded_text(context: str, text: str) -> str:
    """What the embedder reads for a chunk: its context, then its text (also from stored columns)."""
    return f"{context}\n{text}" if text else context


def context_line(title: str, heading_path: Sequence[str], page: int | None) -> str:
    """``Title › Heading › Subheading, page 3``; a first heading that repeats the title is said once."""
    headings = [h.strip() for h in heading_path if h.strip()]
    if headings and headings[0].casefold() == title.strip().casefold():
        headings = headings[1:]
    line = HEADING_SEPARATOR.join([title.strip() or "Untitled", *headings])
    return f"{line}, page {page}" if page is not None else line


def properties_line(properties: dict[str, str]) -> str:
    """Front matter as ``key: value; key: value``, long values cut."""
    shown = []
    for key, value in properties.items():
        value = " ".join(str(value).split())
        if not value:
            continue
        if len(value) > PROPERTY_VALUE_CHARS:
            value = value[:PROPERTY_VALUE_CHARS].rsplit(" ", 1)[0] + "…"
        shown.append(f"{key}: {value}")
    return "; ".join(shown)


@dataclass(frozen=True)
class _Unit:
    """A span of the document's text that stays whole in a chunk, and its cost as one line."""

    start: int
    end: int
    cost: int


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _pieces(text: str, start: int, end: int, separators: re.Pattern) -> list[tuple[int, int]]:
    """``text[start:end]`` cut at ``separators``, each piece trimmed, empty ones dropped."""
    spans, at = [], start
    for match in separators.finditer(text, start, end):
        spans.append((at, match.start()))
        at = match.end()
    spans.append((at, end))
    return [piece for s, e in spans if (piece := _trimmed(text, s, e))[0] < piece[1]]


class _Splitter:
    """Cuts a section's text into units of at most ``room`` tokens each, at the coarsest boundary that fits."""

    LEVELS = (_BLANK_LINES, _LINE_ENDS, _SENTENCE_ENDS)

    def __init__(self, text: str, counter: TokenCounter, room: int):
        self.text = text
        self.counter = counter
        self.room = room

    def cost(self, start: int, end: int) -> int:
        return self.counter.line_cost(self.text[start:end])

    def units(self, start: int, end: int, level: int = 0) -> list[_Unit]:
        cost = self.cost(start, end)
        if cost <= self.room:
            return [_Unit(start, end, cost)]
        if level < len(self.LEVELS):
            pieces = _pieces(self.text, start, end, self.LEVELS[level])
            if len(pieces) == 1:
                return self.units(*pieces[0], level + 1)
            return [unit for piece in pieces for unit in self.units(*piece, level + 1)]
        return self._word_groups(start, end)

    def _word_groups(self, start: int, end: int) -> list[_Unit]:
        """Words packed up to ``room`` by their summed costs (counting every prefix again would be quadratic)."""
        groups: list[_Unit] = []
        group_start, group_end, group_cost = None, None, 0
        for match in _WORD.finditer(self.text, start, end):
            word_cost = self.cost(match.start(), match.end())
            if word_cost > self.room:
                if group_start is not None:
                    groups.append(_Unit(group_start, group_end, group_cost))
                    group_start, group_cost = None, 0
                groups.extend(self._cut_word(match.start(), match.end()))
                continue
            if group_start is not None and group_cost + word_cost > self.room:
                groups.append(_Unit(group_start, group_end, group_cost))
                group_start, group_cost = None, 0
            if group_start is None:
                group_start = match.start()
            group_end, group_cost = match.end(), group_cost + word_cost
        if group_start is not None:
            groups.append(_Unit(group_start, group_end, group_cost))
        return groups

    def _cut_word(self, start: int, end: int) -> list[_Unit]:
        """A word longer than the budget, cut where its characters fill it (the only cut inside a word)."""
        pieces: list[_Unit] = []
        while start < end:
            # Halve the piece until it fits: characters per token vary too much along one word to guess.
            cut = end
            while cut - start > 1 and self.cost(start, cut) > self.room:
                cut = start + (cut - start) // 2
            pieces.append(_Unit(start, cut, self.cost(start, cut)))
            start = cut
        return pieces


_HEADING_MARKS = re.compile(r"^\s{0,3}#{1,6}\s+|\s+#+\s*$")


def _heading_line(body: str) -> str:
    """The first line of ``body`` as a heading's text ("## Brewing ##" → "Brewing"), else ""."""
    line = body.split("\n", 1)[0]
    return _HEADING_MARKS.sub("", line).strip() if line.lstrip().startswith("#") else ""


def _fit_context(context: str, counter: TokenCounter, limit: int) -> str:
    """The context within ``limit`` tokens: headings, then characters, taken off the end."""
    if counter.exact(context) <= limit:
        return context
    words = context.split(" ")
    while len(words) > 1 and counter.exact(" ".join(words) + "…") > limit:
        words = words[:max(1, len(words) * 3 // 4)]
    shortened = " ".join(words) + "…"
    while len(shortened) > 2 and counter.exact(shortened) > limit:
        shortened = shortened[:len(shortened) * 3 // 4] + "…"
    return shortened


class NoteChunker:
    def __init__(self, count_tokens: Callable[[str], int], *, max_tokens: int,
                 config: NoteChunkingConfig = NoteChunkingConfig()):
        self.counter = TokenCounter(count_tokens)
        self.budget = min(config.max_tokens, max_tokens)
        self.config = config
        if self.budget <= self.counter.overhead + 32:
            raise ValueError(f"A chunk budget of {self.budget} tokens leaves no room for text.")

    def chunk_file(self, documents: Iterable[NoteDocument]) -> list[NoteChunk]:
        """Every chunk of a file's documents, numbered in order."""
        chunks: list[NoteChunk] = []
        for number, document in enumerate(documents):
            for chunk in self.chunk_document(document, number):
                chunks.append(NoteChunk(**{**chunk.__dict__, "ordinal": len(chunks)}))
        return chunks

    def chunk_document(self, document: NoteDocument, number: int = 0) -> list[NoteChunk]:
        text = document.text
        properties = properties_line(document.properties)
        if properties and all(f"{key}: {value}" in text for key, value in document.properties.items()):
            properties = ""  # a note that is only front matter has it as its text (loaders/front_matter.py)
        chunks: list[NoteChunk] = []
        for section, start, end in self._runs(document):
            extra = properties if not chunks else ""
            chunks.extend(self._section_chunks(document, number, section, text, start, end, extra))
        if properties and not chunks:
            # Front matter only ("rating: 7, pages: 528" and an empty body): still a note to find.
            context = self._context(context_line(document.title, (), None) + "\n" + properties)
            chunks.append(NoteChunk(number, document.part, 0, document.title, (), None, context, "", 0, 0,
                                    self.counter.exact(context)))
        return chunks

    def _spans(self, document: NoteDocument) -> Iterator[tuple[NoteSection, int, int]]:
        """Each section with text, and its span of ``document.text`` (sections are joined with "\n")."""
        offset = 0
        for section in document.sections:
            start, end = _trimmed(document.text, offset, offset + len(section.text))
            offset += len(section.text) + 1
            if start < end:
                yield section, start, end

    def _runs(self, document: NoteDocument) -> Iterator[tuple[NoteSection, int, int]]:
        """Sections to cut, with their spans: with ``merge_sections``, consecutive short sections of one page
        that fit one chunk together are one, under the headings they share (their own headings are in their
        text), so a note of many two-line sections is not many chunks of a few words."""
        spans = list(self._spans(document))
        if not self.config.merge_sections:
            yield from spans
            return
        room = self.budget - self.counter.exact(context_line(document.title, (), None)) - 8
        run: list[tuple[NoteSection, int, int]] = []
        cost = 0
        for span in spans:
            section = span[0]
            own = self.counter.line_cost(document.text[span[1]:span[2]])
            if run and (section.page != run[0][0].page or cost + own > room):
                yield _merged(run)
                run, cost = [], 0
            run.append(span)
            cost += own
        if run:
            yield _merged(run)

    def _context(self, context: str) -> str:
        return _fit_context(context, self.counter, int(self.budget * CONTEXT_SHARE))

    def _section_chunks(self, document: NoteDocument, number: int, section: NoteSection, text: str, start: int,
                        end: int, properties: str) -> list[NoteChunk]:
        """The section's chunks; the first one also carries ``properties`` (the document's front matter)."""
        def context(first: bool, body: str) -> str:
            headings = section.heading_path
            if headings and _heading_line(body) == headings[-1].strip():
                headings = headings[:-1]  # the text starts with its own heading: said once, where it is
            line = context_line(document.title, headings, section.page)
            return self._context(f"{line}\n{properties}" if first and properties else line)

        room = self.budget - self.counter.exact(context(True, ""))
        units = _Splitter(text, self.counter, room).units(start, end)
        chunks: list[NoteChunk] = []
        first = 0
        while first < len(units):
            last, cost = first, units[first].cost
            while last + 1 < len(units) and cost + units[last + 1].cost <= room:
                last += 1
                cost += units[last].cost
            # The sum of line costs is an estimate: the exact count decides, one unit less at a time.
            while True:
                body = text[units[first].start:units[last].end]
                said = context(not chunks, body)
                tokens = self.counter.exact(embedded_text(said, body))
                if tokens <= self.budget or last == first:
                    break
                last -= 1
            chunks.append(NoteChunk(number, document.part, 0, document.title, tuple(section.heading_path),
                                    section.page, said, body, units[first].start, units[last].end, tokens))
            if last + 1 >= len(units):
                break
            overlap = last > first and units[last].cost <= self.config.overlap_tokens
            first = last if overlap else last + 1
        return chunks


def _merged(run: list[tuple[NoteSection, int, int]]) -> tuple[NoteSection, int, int]:
    if len(run) == 1:
        return run[0]
    paths = [section.heading_path for section, _start, _end in run]
    shared = 0
    while all(len(path) > shared and path[shared] == paths[0][shared] for path in paths):
        shared += 1
    return NoteSection("", paths[0][:shared], run[0][0].page), run[0][1], run[-1][2]


def chunk_file(documents: Iterable[NoteDocument], count_tokens: Callable[[str], int], *, max_tokens: int,
               config: NoteChunkingConfig = NoteChunkingConfig()) -> list[NoteChunk]:
    """Chunks of a file's documents, each within ``min(config.max_tokens, max_tokens)`` tokens."""
    return NoteChunker(count_tokens, max_tokens=max_tokens, config=config).chunk_file(documents)
