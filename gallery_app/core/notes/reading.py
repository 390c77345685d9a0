"""A note passage in its document, for the window's note viewer: the document's text as the loader gives it
(what was chunked, so a chunk's span points into it) and where the passage is in it now.

The file is read again, not taken from the library: the library keeps chunks, not whole notes, and the
person wants to read around the passage. A file edited since it was indexed may have moved the passage
(found again by its text) or lost it (the viewer then shows the note without a highlight).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import apsw

from gallery_app.core.errors import AppError
from gallery_app.core.file_names import printable
from gallery_app.core.notes.documents import NoteSkipped
from gallery_app.core.notes.repository import chunks_by_id


@dataclass(frozen=True)
class NotePassage:
    title: str
    path: Path
    relative_path: str
    kind: str | None
    #: The document's text (a ``.jsonl`` file: the passage's line's note only).
    text: str
    #: The passage's span in ``text``; None when the file no longer holds it.
    start: int | None
    end: int | None

    @property
    def found(self) -> bool:
        return self.start is not None


def read_passage(conn: apsw.Connection, chunk_id: int) -> NotePassage:
    """The document of the note chunk ``chunk_id``, read from its file, with the chunk's place in it."""
    from gallery_app.core.notes.loaders import load_file  # the PDF and Word readers load only when needed

    chunk = chunks_by_id(conn, [chunk_id]).get(chunk_id)
    if chunk is None:
        raise AppError("This passage is no longer in the library: its notes folder was removed or rescanned.",
                       hint="Ask the question again.")
    try:
        documents = load_file(chunk.path)
    except NoteSkipped as skipped:
        raise AppError(f"{printable(chunk.relative_path)} cannot be opened: {skipped.reason}.") from None
    document = next((d for d in documents if d.part == chunk.part), None)
    if document is None:
        raise AppError(f"{printable(chunk.relative_path)} no longer holds this note (line {chunk.part}).",
                       hint="Its folder is rescanned at the next start, or add it again.")
    text = document.text
    start, end = chunk.start, chunk.end
    if text[start:end] != chunk.text:  # edited since it was indexed
        at = text.find(chunk.text)
        start, end = (at, at + len(chunk.text)) if at >= 0 and chunk.text else (None, None)
    return NotePassage(document.title, chunk.path, chunk.relative_path, chunk.kind, text, start, end)
