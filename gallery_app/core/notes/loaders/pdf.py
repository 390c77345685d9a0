"""A PDF's text layer → one document, a section per page (and per bookmark within a page), pypdfium2 (PDFium).

pypdfium2 rather than pypdf: on the notes fixtures' PDFs it reads 549 pages/s against pypdf's 62 (9x,
``bench/pdf_text.py``), finds the same quotes, and needs no fontTools for CFF fonts; its licence
(Apache-2.0 or BSD-3-Clause, PDFium's BSD-3-Clause and its bundled libraries' permissive ones) sits with
the app's MIT. The bookmarks (the PDF's outline) give the sections their heading path: a bookmark's
title is looked up in its page's text and the page is split there; one not found there still applies
from where the previous one was found.

PDFium is not thread-safe, even across documents, and the indexer loads files on worker threads, so
every call into it holds ``PDFIUM_LOCK``.
"""

from __future__ import annotations

import re
import threading
import unicodedata

from gallery_app.core.notes.documents import NoteDocument, NoteSection, NoteSkipped

#: Held around every use of PDFium in the app (it keeps global state; two threads in it at once crash).
PDFIUM_LOCK = threading.Lock()

#: Characters of a text layer that are not words: C0 controls but line ends and tabs, and PDFium's
#: marker for a glyph it has no Unicode for.
_NOT_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")
#: An outline deeper than this is a crafted file, not a document's structure.
_TOC_DEPTH = 8


def load_pdf(raw: bytes, title: str) -> list[NoteDocument]:
    import pypdfium2

    with PDFIUM_LOCK:
        try:
            document = pypdfium2.PdfDocument(raw)
        except pypdfium2.PdfiumError as exc:
            raise NoteSkipped(_open_failure(exc)) from None
        try:
            texts, problems = _page_texts(document)
            bookmarks = _bookmarks(document)
        finally:
            document.close()
    if not texts:
        raise NoteSkipped("damaged PDF: it has no pages")
    if not any(ch.isalnum() for text in texts.values() for ch in text):
        raise NoteSkipped("scanned PDF without a text layer")
    sections = _sections(texts, bookmarks)
    return [NoteDocument(title=title, kind="pdf", sections=tuple(sections), problems=tuple(problems))]


def _open_failure(exc) -> str:
    import pypdfium2.raw as pdfium_c

    code = getattr(exc, "err_code", None)
    if code == pdfium_c.FPDF_ERR_PASSWORD:
        return "password-protected PDF"
    if code == pdfium_c.FPDF_ERR_SECURITY:
        return "password-protected PDF (a security handler PDFium cannot open)"
    if code == pdfium_c.FPDF_ERR_FORMAT:
        return "damaged PDF: not a valid PDF structure"
    return f"damaged PDF: {exc}"


def _page_texts(document) -> tuple[dict[int, str], list[str]]:
    """Every page's text (1-based page → text, NFKC, ``\\n`` line ends); pages PDFium could not read, said."""
    import pypdfium2

    texts: dict[int, str] = {}
    problems: list[str] = []
    for index in range(len(document)):
        try:
            page = document[index]
            try:
                textpage = page.get_textpage()
                try:
                    text = textpage.get_text_range()
                finally:
                    textpage.close()
            finally:
                page.close()
        except pypdfium2.PdfiumError as exc:
            problems.append(f"page {index + 1} could not be read ({exc})")
            continue
        # NFKC: PDFs write "ﬁ" and "ﬀ" as one ligature character, which no one types in a question.
        text = unicodedata.normalize("NFKC", text.replace("\r\n", "\n").replace("\r", "\n"))
        texts[index + 1] = _NOT_TEXT.sub("", text)
    return texts, problems


def _bookmarks(document) -> dict[int, list[tuple[int, str]]]:
    """Page → its bookmarks in outline order, as (level, title); a broken outline is no outline."""
    import pypdfium2

    found: dict[int, list[tuple[int, str]]] = {}
    try:
        for bookmark in document.get_toc(max_depth=_TOC_DEPTH):
            title = " ".join(unicodedata.normalize("NFKC", bookmark.get_title() or "").split())
            destination = bookmark.get_dest()
            page = destination.get_index() if destination is not None else None
            if title and page is not None and 0 <= page < len(document):
                found.setdefault(page + 1, []).append((bookmark.level, title))
    except (pypdfium2.PdfiumError, ValueError, RecursionError):
        return {}
    return found


def _sections(texts: dict[int, str], bookmarks: dict[int, list[tuple[int, str]]]) -> list[NoteSection]:
    sections: list[NoteSection] = []
    path: list[str] = []
    for page, text in texts.items():
        cursor = 0
        for level, title in bookmarks.get(page, ()):
            found = _find_title(text, title, cursor)
            if found is not None and text[cursor:found].strip():
                sections.append(NoteSection(text[cursor:found].strip("\n").rstrip(), tuple(path), page))
                cursor = found
            path = [*path[:level], title]
        rest = text[cursor:].strip("\n").rstrip()
        if rest.strip():
            sections.append(NoteSection(rest, tuple(path), page))
    return sections


def _find_title(text: str, title: str, start: int) -> int | None:
    """Where ``title`` starts as a line of its own (a contents entry has dots and a page number after it)."""
    words = [_loose(word) for word in title.split()]
    pattern = re.compile(r"^[ \t]*(?:[\dIVXivx]+(?:\.\d+)*\.?[ \t]+)?" + r"\s+".join(words) + r"[ \t]*$", re.MULTILINE)
    match = pattern.search(text, start)
    return match.start() if match else None


def _loose(word: str) -> str:
    """``word`` as a pattern in which a PDF's typographic quotes and dashes match the outline's plain ones."""
    return "".join(_EQUIVALENT.get(ch, re.escape(ch)) for ch in word)


_QUOTES, _DASHES = "'‘’′", "-‐‑‒–—−"
_EQUIVALENT = {**{ch: f"[{_QUOTES}]" for ch in _QUOTES}, **{ch: f"[{re.escape(_DASHES)}]" for ch in _DASHES},
               '"': '["“”]', "“": '["“”]', "”": '["“”]'}
