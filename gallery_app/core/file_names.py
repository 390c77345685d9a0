"""A file name three ways: as the disk has it, as the database keeps it, as a person reads it (photos and chats).

On Linux a file name is bytes. Python hands bytes that are not UTF-8 (``caf\\xe9.jpg`` from an old
Latin-1 camera card or a Windows zip) over as a ``str`` with lone surrogates, which opens the file
fine but which SQLite, terminals and Qt refuse or drop. So such a path is stored as its raw bytes (a
BLOB: never equal to any TEXT path, so lookups and uniqueness still hold, and every UTF-8 path stays
the TEXT it always was) and shown with the odd bytes written out as ``\\xe9``.
"""

from __future__ import annotations

import os
import unicodedata


def to_db(path: os.PathLike | str) -> str | bytes:
    """The value stored for ``path``: its text, or its file-system bytes when it is not valid Unicode."""
    text = os.fsdecode(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(text)
    return text


def from_db(value: str | bytes) -> str:
    """The path ``to_db`` stored, as the ``str`` that opens the file again."""
    return os.fsdecode(value) if isinstance(value, bytes) else value


def printable(path: os.PathLike | str) -> str:
    """``path`` for a terminal or a label: undecodable bytes as ``\\xe9``, control characters escaped."""
    text = os.fsdecode(path)
    if text.isprintable():
        return text
    return "".join(_shown(ch) for ch in text)


def _shown(ch: str) -> str:
    if 0xDC80 <= ord(ch) <= 0xDCFF:  # Python's stand-in for the undecodable byte ord(ch) - 0xDC00
        return f"\\x{ord(ch) - 0xDC00:02x}"
    if unicodedata.category(ch) in ("Cc", "Cs"):  # a newline or an ANSI escape in a name must not act
        return ch.encode("unicode_escape").decode("ascii")
    return ch
