"""One registry from a file's extension to its loader, and ``load_file``: a file → its documents, or NoteSkipped.

Every loader takes the file's bytes and its default title (the file name without extension) and returns
documents whose sections all have text; ``load_file`` adds what every format shares: the size cap, unreadable
files, files that are something else under a text name, and a last check that no document is empty.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from pathlib import Path

from gallery_app.core.file_names import printable
from gallery_app.core.notes.documents import NoteDocument, NoteSection, NoteSkipped
from gallery_app.core.notes.loaders.jsonl import load_jsonl
from gallery_app.core.notes.loaders.markdown import load_markdown
from gallery_app.core.notes.loaders.pdf import load_pdf
from gallery_app.core.notes.loaders.text import load_text
from gallery_app.core.notes.loaders.word import load_docx
from gallery_app.core.units import MB, describe_size

__all__ = ["LOADERS", "MAX_NOTE_BYTES", "SUPPORTED_EXTENSIONS", "NoteDocument", "NoteSection", "NoteSkipped",
           "load_file"]

Loader = Callable[[bytes, str], list[NoteDocument]]

#: Larger files are not read: a 50 MB PDF is a long book with pictures, a 50 MB text is a log or a dump,
#: and either would hold up a folder's indexing for minutes while the person waits for their notes.
MAX_NOTE_BYTES = 50 * MB

LOADERS: dict[str, Loader] = {
    ".txt": load_text,
    ".md": load_markdown,
    ".markdown": load_markdown,
    ".jsonl": load_jsonl,
    ".pdf": load_pdf,
    ".docx": load_docx,
}

SUPPORTED_EXTENSIONS: frozenset[str] = frozenset(LOADERS)

#: Formats that are sometimes given a text name (a download saved as "notes.txt"): said by name.
_MAGIC = ((b"%PDF-", "a PDF"), (b"PK\x03\x04", "a zip archive (or a Word file)"), (b"\x89PNG", "a PNG image"),
          (b"\xff\xd8\xff", "a JPEG image"), (b"GIF87a", "a GIF image"), (b"GIF89a", "a GIF image"), (b"\x1f\x8b", "gzip-compressed data"),
          (b"7z\xbc\xaf", "a 7-Zip archive"), (b"Rar!", "a RAR archive"), (b"\x7fELF", "a program"),
          (b"SQLite format 3\x00", "an SQLite database"),
          (b"\xd0\xcf\x11\xe0", "an old Office document (.doc/.xls)"), (b"OggS", "audio"))
_TEXT_EXTENSIONS = frozenset({".txt", ".md", ".markdown", ".jsonl"})


def load_file(path: Path, *, max_bytes: int = MAX_NOTE_BYTES) -> list[NoteDocument]:
    """The documents of one notes file; NoteSkipped(reason) when it is not indexed, never an empty document."""
    path = Path(path)
    extension = path.suffix.lower()
    loader = LOADERS.get(extension)
    if loader is None:
        raise NoteSkipped(f"unknown file type {extension}" if extension else "unknown file type (no extension)")
    raw = _read(path, max_bytes)
    if not raw.strip():
        raise NoteSkipped("empty note")
    if extension in _TEXT_EXTENSIONS:
        _refuse_other_formats(raw)
    documents = [document for document in loader(raw, printable(path.stem)) if document.text.strip()]
    if not documents:
        raise NoteSkipped("empty note")
    return documents


def _read(path: Path, max_bytes: int) -> bytes:
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise NoteSkipped(_too_large(size, max_bytes))
        with path.open("rb") as handle:
            raw = handle.read(max_bytes + 1)
    except OSError as exc:
        raise NoteSkipped(_unreadable(exc)) from None
    if len(raw) > max_bytes:  # the file grew after stat()
        raise NoteSkipped(_too_large(len(raw), max_bytes))
    return raw


def _too_large(size: int, max_bytes: int) -> str:
    return f"too large: {describe_size(size)}, over the {describe_size(max_bytes)} limit for a note"


def _unreadable(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "a symbolic link that loops back on itself"
    if exc.errno == errno.ENOENT:
        return "the file is gone (deleted, or a link to a file that does not exist)"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "not allowed to read the file (permissions)"
    if exc.errno == errno.EISDIR:
        return "a folder, not a file"
    return f"cannot be read: {exc.strerror or exc}"


def _refuse_other_formats(raw: bytes) -> None:
    for magic, name in _MAGIC:
        if raw.startswith(magic):
            raise NoteSkipped(f"binary file, not text: the file is {name}")
