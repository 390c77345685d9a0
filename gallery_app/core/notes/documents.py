"""What a notes loader produces: a document's text in sections that know their heading path and page.

Every loader (``core/notes/loaders.py``) turns one file into one or more ``NoteDocument`` (a ``.jsonl`` file
is one document per line) or raises ``NoteSkipped`` with a reason a person reads in the summary. A loader
never returns an empty document: "silently importing an empty document would poison retrieval".
"""
from __future__ import annotations

from dataclasses import dataclass, field


class NoteSkipped(Exception):
    """A file that is not indexed, with the reason ("scanned PDF without a text layer", "password-protected PDF")."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class NoteSection:
    """A run of a document's text under one heading path, on one page (PDF) or None (no pages)."""

    text: str
    #: Headings above this text, outermost first (("Coffee", "Brewing gear")); () when there is none.
    heading_path: tuple[str, ...] = ()
    #: 1-based page number for PDFs, None for formats without pages.
    page: int | None = None


@dataclass(frozen=True)
class NoteDocument:
    """One document: a file, or one line of a ``.jsonl`` file (``part`` = its 1-based line number)."""

    #: Shown as the passage's title: a note's title, front matter ``title``, or the file name without extension.
    title: str
    #: "markdown" | "text" | "jsonl" | "pdf" | "docx".
    kind: str
    sections: tuple[NoteSection, ...]
    part: int | None = None
    #: Front matter read as plain values (wikilinks unwrapped), kept for the chunk's context line.
    properties: dict[str, str] = field(default_factory=dict)
    #: What of the file was left out while it was read ("line 12: not JSON", "page 3 could not be read"), for
    #: the summary: the file is indexed without it. Carried by a file's first document only.
    problems: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return "\n".join(section.text for section in self.sections)
