"""A Markdown note (Obsidian and friends) → one document whose sections follow its headings.

Each ATX (``## Brewing``) or setext (``Brewing`` over ``-----``) heading starts a section, and the headings
above it are its ``heading_path``, the way a chat line keeps its ``Sender:``. The heading line stays at the
top of its section's text, as written, so the words stay where the person put them. Outside code, the
markup that has no words of its own is read the way Obsidian shows it: wikilinks and embeds
(``wikilinks.py``), ``> [!NOTE] Title`` callouts as "Note: Title" and their lines without ``>``, inline HTML
without its tags, ``%% comments %%`` dropped. Everything else (lists, tables, ``**bold**``, LaTeX, tags) is
left as it is: the words a quote would be looked up by are the file's own.
"""

from __future__ import annotations

import html
import re

from gallery_app.core.notes.documents import NoteDocument, NoteSection
from gallery_app.core.notes.loaders.front_matter import front_matter_document
from gallery_app.core.notes.loaders.text import decode_note_bytes
from gallery_app.core.notes.loaders.wikilinks import unwrap_links

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# A line that cannot be the text of a setext heading (a list item, a quote, a table row, a rule).
_NOT_SETEXT_TEXT = re.compile(r"^\s*(?:[-*+>|]|\d+[.)]\s|#|$)")
_CALLOUT = re.compile(r"^((?:[ \t]*>)+)[ \t]*\[!([\w-]+)\][+-]?[ \t]*(.*)$")
_QUOTE_MARKS = re.compile(r"^(?:[ \t]*>)+[ \t]?")
_CODE_SPAN = re.compile(r"(`+)(?:.+?)\1")
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_HIDDEN_ELEMENT = re.compile(r"<(script|style)\b[^>]*>.*?</\1\s*>", re.DOTALL | re.IGNORECASE)
# Only the tags people put into notes: `<port>`, `<user>@<host>` and `<Current Date>` are words, not HTML.
_TAG_NAMES = ("a|abbr|b|big|blockquote|br|center|cite|code|dd|del|details|div|dl|dt|em|figcaption|figure|font|"
              "h[1-6]|hr|i|iframe|img|ins|kbd|li|mark|nobr|ol|p|pre|q|s|samp|small|span|strike|strong|sub|"
              "summary|sup|table|tbody|td|tfoot|th|thead|tr|tt|u|ul|video|audio|picture|wbr")
_TAG = re.compile(rf"</?(?:{_TAG_NAMES})(?:\s[^<>]*)?/?>", re.IGNORECASE)
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
_ENTITY = re.compile(r"&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_EMPHASIS = re.compile(r"(\*\*|__|\*|~~|==)(.+?)\1")


def load_markdown(raw: bytes, title: str) -> list[NoteDocument]:
    text = decode_note_bytes(raw)
    return [front_matter_document(text, title, kind="markdown", body_sections=markdown_sections,
                                  says_something=says_something)]


def markdown_sections(body: str) -> list[NoteSection]:
    """The body's sections, each starting at a heading (the first one at the top of the note)."""
    lines = body.split("\n")
    sections: list[NoteSection] = []
    path: list[tuple[int, str]] = []
    current: list[str] = []
    fence: str | None = None
    in_callout = in_comment = False

    def close() -> None:
        text = "\n".join(current).strip("\n").rstrip()
        if text.strip():
            sections.append(NoteSection(text, tuple(name for _, name in path)))
        current.clear()

    index = 0
    while index < len(lines):
        line = lines[index]
        if fence:
            current.append(line)
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
            index += 1
            continue
        opened = _FENCE.match(line)
        if opened:
            fence = opened.group(1)
            in_callout = False
            current.append(line)
            index += 1
            continue
        heading = _heading(line, lines[index + 1] if index + 1 < len(lines) else None)
        if heading:
            level, name, consumed = heading
            close()
            in_callout = False
            while path and path[-1][0] >= level:
                path.pop()
            shown = _plain_heading(name)
            if shown:
                path.append((level, shown))
            current.extend(_inline(part) for part in lines[index:index + consumed])
            index += consumed
            continue
        line, in_comment = _outside_comments(line, in_comment)
        line, in_callout = _callout(line, in_callout)
        current.append(_inline(line))
        index += 1
    close()
    return sections


def says_something(sections: list[NoteSection]) -> bool:
    """Whether any section has a line beside its heading (``## Books`` over a dropped embed has none)."""
    for section in sections:
        lines = [line for line in section.text.split("\n") if line.strip()]
        if section.heading_path:
            lines = [line for line in lines if not (_ATX.match(line) or _SETEXT.match(line))]
            lines = lines[1:] if lines and lines[0].strip() == section.heading_path[-1] else lines
        if lines:
            return True
    return False


def _heading(line: str, following: str | None) -> tuple[int, str, int] | None:
    """(level, text, lines it takes) when ``line`` is a heading, else None."""
    atx = _ATX.match(line)
    if atx:
        return len(atx.group(1)), atx.group(2) or "", 1
    if following is not None and not _NOT_SETEXT_TEXT.match(line) and not line.startswith(("    ", "\t")):
        underline = _SETEXT.match(following)
        if underline:
            return (1 if underline.group(1)[0] == "=" else 2), line.strip(), 2
    return None


def _callout(line: str, in_callout: bool) -> tuple[str, bool]:
    """A callout's first line as "Type: Title", its other lines without ``>``; other lines as they are."""
    opened = _CALLOUT.match(line)
    if opened:
        kind = opened.group(2).replace("-", " ").capitalize()
        title = opened.group(3).strip()
        return (f"{kind}: {title}" if title else f"{kind}:"), True
    if in_callout:
        if line.lstrip().startswith(">"):
            return _QUOTE_MARKS.sub("", line), True
        return line, False
    return line, False


def _inline(line: str) -> str:
    """Links, HTML and entities rewritten outside code spans; the code spans themselves left alone."""
    if not any(mark in line for mark in ("[[", "<", "&")):
        return line
    pieces, last = [], 0
    for span in _CODE_SPAN.finditer(line):
        pieces.append(_prose(line[last:span.start()]))
        pieces.append(span.group(0))
        last = span.end()
    pieces.append(_prose(line[last:]))
    return "".join(pieces)


def _prose(text: str) -> str:
    text = unwrap_links(text)
    if "<" in text:
        text = _HIDDEN_ELEMENT.sub("", _HTML_COMMENT.sub("", text))
        text = _TAG.sub("", _BREAK.sub(" ", text))
    if "&" in text:
        text = _ENTITY.sub(lambda match: html.unescape(match.group(0)), text)
    return text


def _plain_heading(name: str) -> str:
    """A heading as the context line shows it: no links, tags, emphasis marks or trailing colon."""
    shown = _prose(name)
    shown = _EMPHASIS.sub(r"\2", shown)
    shown = shown.replace("`", "")
    return " ".join(shown.split()).rstrip(":").strip()


def _outside_comments(line: str, in_comment: bool) -> tuple[str, bool]:
    """Obsidian hides ``%% … %%`` (also across lines) in reading view, so the index does too."""
    if "%%" not in line:
        return ("" if in_comment else line), in_comment
    kept = []
    for piece in line.split("%%"):
        if not in_comment:
            kept.append(piece)
        in_comment = not in_comment
    # One toggle per "%%" and one piece more than toggles: undo the last, which no "%%" followed.
    return "".join(kept), not in_comment
