"""A Word file (.docx) → one document: its paragraphs and tables in order, in sections under their headings.

python-docx reads the file. A paragraph in a "Heading N" style (or "Title", above them) starts a section
at level N of the heading path. Many handouts never use those styles and make headings by hand, bigger or
bold; in a document without any heading style, a short paragraph that is all bold or in a larger font
than the body's is taken as a heading, the largest font the outermost. A table's row is a line, its
cells joined by " | " (a cell merged over several columns said once).

A .docx is a zip: one that would unpack to more than ``MAX_UNPACKED_BYTES`` is refused unread (a small
file can unpack to gigabytes), and an encrypted one (an OLE file, not a zip) is said to be one.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from collections import Counter

from gallery_app.core.notes.documents import NoteDocument, NoteSection, NoteSkipped
from gallery_app.core.units import MB, describe_size

#: A 50 MB Word file of text and pictures unpacks to about as much again; 10x that is not a document.
MAX_UNPACKED_BYTES = 500 * MB
_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
#: A hand-made heading is a line, not a paragraph.
_HEADING_CHARS = 120
#: Word's size when neither the run, its style nor the document's defaults say (12 pt, in EMU).
_DEFAULT_SIZE = 152400


def load_docx(raw: bytes, title: str) -> list[NoteDocument]:
    import docx

    if raw.startswith(_OLE_MAGIC):
        raise NoteSkipped("password-protected Word file (or an old .doc renamed .docx)")
    _refuse_zip_bomb(raw)
    try:
        document = docx.Document(io.BytesIO(raw))
        blocks = list(document.iter_inner_content())
        author = (document.core_properties.author or "").strip()
    except zipfile.BadZipFile:
        raise NoteSkipped("damaged Word file: not a complete .docx (zip) file") from None
    except KeyError:
        raise NoteSkipped("damaged Word file: a part of the document is missing") from None
    except Exception as exc:  # python-docx and lxml have many ways to say "broken"; none may crash the indexer
        raise NoteSkipped(f"damaged Word file: {_reason(exc)}") from None
    sections = _sections(document, blocks)
    properties = {"author": author} if author else {}
    return [NoteDocument(title=title, kind="docx", sections=tuple(sections), properties=properties)]


def _reason(exc: Exception) -> str:
    if isinstance(exc, zlib.error):
        return "a compressed part of it is corrupt"
    if type(exc).__name__ == "XMLSyntaxError":
        return "its XML is malformed"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


def _refuse_zip_bomb(raw: bytes) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            unpacked = sum(info.file_size for info in archive.infolist())
    except zipfile.BadZipFile:
        raise NoteSkipped("damaged Word file: not a complete .docx (zip) file") from None
    except Exception as exc:
        raise NoteSkipped(f"damaged Word file: {_reason(exc)}") from None
    if unpacked > MAX_UNPACKED_BYTES:
        raise NoteSkipped(f"Word file that unpacks to {describe_size(unpacked)}, over the "
                          f"{describe_size(MAX_UNPACKED_BYTES)} a document may take")


def _sections(document, blocks) -> list[NoteSection]:
    from docx.table import Table

    paragraphs = [block for block in blocks if not isinstance(block, Table)]
    levels = _styled_levels(paragraphs) or _visual_levels(document, paragraphs)
    sections: list[NoteSection] = []
    path: list[tuple[int, str]] = []
    lines: list[str] = []

    def close() -> None:
        text = "\n".join(lines).strip("\n").rstrip()
        if text.strip():
            sections.append(NoteSection(text, tuple(name for _, name in path)))
        lines.clear()

    for block in blocks:
        if isinstance(block, Table):
            lines.extend(_table_lines(block))
            continue
        level = levels.get(id(block))
        if level is not None:
            close()
            while path and path[-1][0] >= level:
                path.pop()
            path.append((level, " ".join(block.text.split())))
        lines.append(block.text)
    close()
    return sections


def _styled_levels(paragraphs) -> dict[int, int]:
    levels = {}
    for paragraph in paragraphs:
        name = _style_name(paragraph).strip().lower()
        match = _HEADING_STYLE.match(name)
        level = 0 if name == "title" else int(match.group(1)) if match else None
        if level is not None and paragraph.text.strip():
            levels[id(paragraph)] = level
    # A Title alone is the document's name, not a structure: hand-made headings may still be below it.
    return levels if any(level > 0 for level in levels.values()) else {}


def _visual_levels(document, paragraphs) -> dict[int, int]:
    """Hand-made headings: short, not list items, all bold or in a font larger than the body's."""
    default = _document_size(document)
    body = Counter()
    looks = {}
    for paragraph in paragraphs:
        runs = [run for run in paragraph.runs if run.text.strip()]
        if not runs:
            continue
        sizes = [_run_size(run, paragraph, default) for run in runs]
        for run, size in zip(runs, sizes):
            body[size] += len(run.text)
        if _could_be_heading(paragraph, runs):
            looks[id(paragraph)] = (max(sizes), all(_is_bold(run, paragraph) for run in runs))
    if not body:
        return {}
    body_size = body.most_common(1)[0][0]
    headings = {key: look for key, look in looks.items() if look[0] > body_size or look[1]}
    ranked = sorted(set(headings.values()), reverse=True)  # larger first, bold before plain at one size
    levels = {key: ranked.index(look) + 1 for key, look in headings.items()}
    styled_title = [p for p in paragraphs if _style_name(p).strip().lower() == "title" and p.text.strip()]
    for paragraph in styled_title:
        levels[id(paragraph)] = 0
    return levels


def _could_be_heading(paragraph, runs) -> bool:
    text = paragraph.text.strip()
    if len(text) > _HEADING_CHARS or text.endswith((".", ",", ";")):
        return False
    if "list" in _style_name(paragraph).lower() or paragraph._p.pPr is not None and paragraph._p.pPr.numPr is not None:
        return False
    return True


def _style_name(paragraph) -> str:
    try:
        return (paragraph.style.name if paragraph.style is not None else "") or ""
    except (KeyError, ValueError, AttributeError):
        return ""


def _is_bold(run, paragraph) -> bool:
    if run.bold is not None:
        return run.bold
    style = paragraph.style
    while style is not None:
        if style.font.bold is not None:
            return style.font.bold
        style = style.base_style
    return False


def _run_size(run, paragraph, default: int) -> int:
    if run.font.size is not None:
        return run.font.size
    style = paragraph.style
    while style is not None:
        if style.font.size is not None:
            return style.font.size
        style = style.base_style
    return default


def _document_size(document) -> int:
    # docDefaults keep the size in half-points; 12700 EMU to a point.
    values = document.styles.element.xpath("w:docDefaults/w:rPrDefault/w:rPr/w:sz/@w:val")
    try:
        return int(values[0]) * 12700 // 2 if values else _DEFAULT_SIZE
    except ValueError:
        return _DEFAULT_SIZE


def _table_lines(table) -> list[str]:
    lines = []
    for row in table.rows:
        cells, last = [], None
        for cell in row.cells:
            if cell._tc is last:  # a merged cell is listed once per column it spans
                continue
            last = cell._tc
            text = " ".join(cell.text.split())
            if text:
                cells.append(text)
        if cells:
            lines.append(" | ".join(cells))
    return lines
