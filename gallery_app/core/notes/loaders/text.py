"""Bytes of a text note → str, or NoteSkipped when they are not text; and the ``.txt`` loader.

A notes folder holds files from many editors and years: UTF-8 today, UTF-16 from Windows' Notepad, cp1252
or Latin-1 from older machines. A file that decodes only with "�" replacements would put noise into the
index, so a file whose encoding cannot be told is refused with that reason instead.
"""

from __future__ import annotations

import codecs
import unicodedata

from gallery_app.core.notes.documents import NoteDocument, NoteSection, NoteSkipped
from gallery_app.core.notes.loaders.front_matter import front_matter_document
from gallery_app.core.text_encoding import utf16_without_bom

#: Below this share of letters, digits, punctuation and spaces a decoding is a wrong guess (or not text).
_PLAUSIBLE_SHARE = 0.97
_SAMPLE = 64 * 1024
#: How much messier than the cleanest decoding another may look to charset-normalizer and still be as likely.
_CHAOS_MARGIN = 0.1
#: Valid non-ASCII UTF-8 characters per broken byte sequence that still make a file UTF-8.
_UTF8_EVIDENCE = 2

_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
         (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


def decode_note_bytes(raw: bytes) -> str:
    """The text of a note file with ``\\n`` line ends; NoteSkipped when it is binary or in an unknown encoding."""
    text = _decode(raw)
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _decode(raw: bytes) -> str:
    # UTF-32 LE's BOM starts with UTF-16 LE's, so the longer BOMs are tried first.
    for bom, encoding in _BOMS:
        if raw.startswith(bom):
            return _strict(raw[len(bom):], encoding)
    # Before UTF-8: ASCII in UTF-16 is valid UTF-8 too, with a NUL after every letter.
    utf16 = utf16_without_bom(raw)
    if utf16:
        return _strict(raw, utf16)
    if b"\x00" in raw:
        raise NoteSkipped(_binary_reason(raw))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = _mostly_utf8(raw, exc)
        if text is None:
            return _guess_legacy(raw)
    if not _plausible(text):
        raise NoteSkipped(_binary_reason(raw))
    return text


def _mostly_utf8(raw: bytes, error: UnicodeDecodeError) -> str | None:
    """UTF-8 with a few broken bytes (a file cut mid-character, one pasted line from elsewhere), or None.

    Legacy encodings almost never form valid UTF-8 sequences by chance, so many valid ones beside a few
    broken ones say UTF-8; reading such a file as cp1252 would garble every other accented letter.
    """
    # Not final: a character cut off at the end of the file is dropped, not written as "�".
    text = codecs.getincrementaldecoder("utf-8")("replace").decode(raw, final=False)
    if error.start >= len(raw) - 3 and error.reason == "unexpected end of data":
        return text
    broken = text.count("\ufffd")
    valid = sum(1 for ch in text if ord(ch) > 0x7F) - broken
    return text if valid >= max(_UTF8_EVIDENCE * broken, 4) else None


def _strict(raw: bytes, encoding: str) -> str:
    name = encoding.upper().replace("-LE", "").replace("-BE", "")
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as exc:
        raise NoteSkipped(f"damaged {name} text: bytes at offset {exc.start} are not {name}") from None
    if not _plausible(text):
        raise NoteSkipped(_binary_reason(raw))
    return text


def _guess_legacy(raw: bytes) -> str:
    """Not UTF-8: the encoding charset-normalizer finds, kept only when the text it gives reads as text.

    On a short note several decodings look equally clean to the detector ("crème" as cp1250's "crčme"),
    so among those near the cleanest, cp1252 (what Windows wrote Western text in; Latin-1's letters
    too) is taken when it is one of them.
    """
    from charset_normalizer import from_bytes

    matches = list(from_bytes(raw[:4 * _SAMPLE]))
    candidates = []
    if matches:
        cleanest = min(match.chaos for match in matches)
        near = [match for match in matches if match.chaos <= cleanest + _CHAOS_MARGIN]
        if any("cp1252" in match.could_be_from_charset for match in near):
            candidates.append("cp1252")
        candidates.append(min(near, key=lambda match: match.chaos).encoding)
    candidates.append("cp1252")
    for encoding in candidates:
        try:
            text = raw.decode(encoding)
        except (UnicodeDecodeError, LookupError):
            continue
        if _plausible(text):
            return text
    raise NoteSkipped("not UTF-8 text, and its encoding could not be recognised (save it as UTF-8)")


def _plausible(text: str) -> bool:
    sample = text[:_SAMPLE]
    if not sample.strip():
        return True
    odd = sum(1 for ch in sample if _is_odd(ch))
    return odd <= (1 - _PLAUSIBLE_SHARE) * len(sample)


def _is_odd(ch: str) -> bool:
    if ch in "\n\r\t\f":
        return False
    category = unicodedata.category(ch)
    # Control characters, unassigned and private-use code points, and "�": what a wrong decoding is made of.
    return category in ("Cc", "Cn", "Co", "Cs") or ch == "\ufffd"


def _binary_reason(raw: bytes) -> str:
    return "binary file, not text (it has NUL bytes)" if b"\x00" in raw else "binary file, not text"


def load_text(raw: bytes, title: str) -> list[NoteDocument]:
    """A ``.txt`` note: the whole file, a leading ``---`` YAML header (cheat sheets) read as front matter."""
    text = decode_note_bytes(raw)
    document = front_matter_document(text, title, kind="text", body_sections=_whole)
    return [document]


def _whole(body: str) -> list[NoteSection]:
    return [NoteSection(body.strip("\n").rstrip())] if body.strip() else []
