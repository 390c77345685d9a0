"""A note's leading ``---`` YAML block (Obsidian's properties, a cheat sheet's header) read as plain values.

A value becomes the words a person reads: a list is "a, b", a date "2023-09-12", ``"[[Books]]"`` "Books".
``title`` names the document. A note that is front matter only ("rating: 7", "pages: 528", no body)
still answers questions, so its text is its properties, one ``key: value`` line each. A block that is not
valid YAML, or not a mapping, is left in the text as it is: it is still the person's words.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable

import yaml

from gallery_app.core.notes.documents import NoteDocument, NoteSection, NoteSkipped
from gallery_app.core.notes.loaders.wikilinks import unwrap_links

_OPEN = re.compile(r"\A\ufeff?---[ \t]*\n")
_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)
#: A value is cut here: YAML aliases can make a tiny block expand to gigabytes when written out.
_VALUE_CHARS = 2000
_DEPTH = 4
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def split_front_matter(text: str) -> tuple[dict[str, str], str | None, str]:
    """(properties, title or None, body); no properties and the whole text when there is no valid block."""
    opened = _OPEN.match(text)
    if not opened:
        return {}, None, text
    closed = _CLOSE.search(text, opened.end())
    if not closed:
        return {}, None, text
    try:
        data = yaml.load(text[opened.end():closed.start()], Loader=_Loader)  # noqa: S506 - a safe loader
    except (yaml.YAMLError, ValueError, RecursionError):
        return {}, None, text
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return {}, None, text
    properties: dict[str, str] = {}
    for key, value in data.items():
        shown = _plain(value, _DEPTH)
        if shown:
            properties[str(key).strip()] = shown[:_VALUE_CHARS]
    title = properties.pop("title", None)
    body = text[closed.end():].removeprefix("\n")
    return properties, title, body


def front_matter_document(text: str, title: str, *, kind: str,
                          body_sections: Callable[[str], list[NoteSection]],
                          says_something: Callable[[list[NoteSection]], bool] = bool) -> NoteDocument:
    """One document: front matter as properties, the body in the sections ``body_sections`` makes of it.

    When the body says nothing (``says_something``: a Markdown body of headings over embeds counts as
    nothing), the properties come first in the text, since they are then all the note says.
    """
    properties, own_title, body = split_front_matter(text)
    sections = [section for section in body_sections(body) if section.text.strip()]
    if properties and not says_something(sections):
        sections.insert(0, NoteSection("\n".join(f"{key}: {value}" for key, value in properties.items())))
    if not sections:
        raise NoteSkipped("empty note")
    return NoteDocument(title=own_title or title, kind=kind, sections=tuple(sections), properties=properties)


def _plain(value, depth: int) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    if isinstance(value, str):
        return " ".join(unwrap_links(value).split())
    if depth <= 0:
        return ""
    if isinstance(value, dict):
        return _joined((f"{key}: {_plain(item, depth - 1)}" for key, item in value.items()), "; ")
    if isinstance(value, list | tuple | set):
        return _joined((_plain(item, depth - 1) for item in value), ", ")
    return str(value)


def _joined(parts, separator: str) -> str:
    kept, size = [], 0
    for part in parts:
        if not part or part.endswith(": "):
            continue
        kept.append(part)
        size += len(part) + len(separator)
        if size > _VALUE_CHARS:
            break
    return separator.join(kept)
