"""Obsidian's link markup as the words a reader sees: ``[[target|alias]]`` → alias, ``[[target]]`` → target.

An embed (``![[…]]``) of a picture, a PDF or a base has no words here, so it is dropped; an embed of a note
reads as that note's name, the way a link does.
"""

from __future__ import annotations

import re

# `\|` is the alias separator inside a Markdown table cell, where a bare `|` would end the cell. Target and
# alias are bounded: unbounded, a long line of "|" after "[[" takes quadratic time to give up on.
_LINK = re.compile(r"(!?)\[\[([^\[\]|\n]{0,500}?)(?:\\?\|([^\[\]\n]{0,500}?))?\]\]")
#: Files an embed shows as something other than text (Obsidian's attachment types and its own views).
_ATTACHMENT_SUFFIXES = frozenset(
    ".png .jpg .jpeg .gif .bmp .svg .webp .avif .heic .tif .tiff .ico "
    ".mp3 .wav .m4a .ogg .flac .webm .3gp .mp4 .mov .mkv .ogv "
    ".pdf .base .canvas .excalidraw".split())


def unwrap_links(text: str) -> str:
    """``text`` with every wikilink and embed replaced by what it reads as (see the module docstring)."""
    if "[[" not in text:
        return text
    return _LINK.sub(_replacement, text)


def _replacement(match: re.Match) -> str:
    embed, target, alias = match.group(1), match.group(2).strip(), match.group(3)
    if embed and _is_attachment(target):
        return ""
    if alias is not None and alias.strip() and not (embed and alias.strip().isdigit()):
        return alias.strip()
    return _shown_target(target)


def _is_attachment(target: str) -> bool:
    name = target.split("#", 1)[0].split("^", 1)[0].strip().lower()
    dot = name.rfind(".")
    return dot > 0 and name[dot:] in _ATTACHMENT_SUFFIXES


def _shown_target(target: str) -> str:
    """``Note#Heading`` → "Note > Heading" as Obsidian shows it; a block id (``^abc123``) is not words."""
    note, _, anchor = target.partition("#")
    note = note.strip()
    if note.lower().endswith(".md"):
        note = note[:-3]
    anchor = anchor.split("^", 1)[0].strip() if not anchor.startswith("^") else ""
    note = note.split("^", 1)[0].strip()
    parts = [part for part in (note, anchor) if part]
    return " > ".join(parts)
