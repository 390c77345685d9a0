"""A ``.jsonl`` export (a notes app's, one note a line) → one document per line, ``part`` its 1-based line number.

A line is a JSON object with a ``text`` (or ``content``/``body``) and a ``title`` (or ``name``); its text is
read as Markdown when the line says so or looks like it (exports keep the notes' Markdown, wikilinks and
all), so headings and links read as they do in a vault. A line that is not JSON, not an object or has no
text is left out and said in the first document's ``problems``: one broken line must not cost the other
notes. A file without a single usable line is skipped.
"""

from __future__ import annotations

import json

from gallery_app.core.notes.documents import NoteDocument, NoteSection, NoteSkipped
from gallery_app.core.notes.loaders.front_matter import front_matter_document
from gallery_app.core.notes.loaders.markdown import markdown_sections, says_something
from gallery_app.core.notes.loaders.text import decode_note_bytes

_TEXT_FIELDS = ("text", "content", "body")
_TITLE_FIELDS = ("title", "name")
#: Problems said one by one up to here, then counted: a file of 10,000 broken lines is one sentence.
_PROBLEMS_SHOWN = 5


def load_jsonl(raw: bytes, title: str) -> list[NoteDocument]:
    documents: list[NoteDocument] = []
    problems: list[str] = []
    for number, line in enumerate(decode_note_bytes(raw).split("\n"), 1):
        if not line.strip():
            continue
        document, problem = _line_document(line, number, title)
        if document is not None:
            documents.append(document)
        elif problem:
            problems.append(f"line {number}: {problem}")
    if not documents:
        if problems:
            raise NoteSkipped(f"no usable line in the JSONL file ({'; '.join(_summary(problems))})")
        raise NoteSkipped("empty note")
    if problems:
        first = documents[0]
        documents[0] = NoteDocument(first.title, first.kind, first.sections, first.part, first.properties,
                                    _summary(problems))
    return documents


def _line_document(line: str, number: int, file_title: str) -> tuple[NoteDocument | None, str | None]:
    try:
        record = json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        return None, "not JSON"
    if not isinstance(record, dict):
        return None, "not a JSON object"
    text = next((record[key] for key in _TEXT_FIELDS if isinstance(record.get(key), str)), None)
    if text is None:
        return None, "no text field"
    title = next((record[key].strip() for key in _TITLE_FIELDS
                  if isinstance(record.get(key), str) and record[key].strip()), f"{file_title}, line {number}")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if _is_markdown(record, text):
        body_sections, said = markdown_sections, says_something
    else:
        body_sections, said = _whole, bool
    try:
        document = front_matter_document(text, title, kind="jsonl", body_sections=body_sections,
                                         says_something=said)
    except NoteSkipped:
        return None, None  # an empty note in the export: nothing to index and nothing wrong
    return NoteDocument(document.title, "jsonl", document.sections, number, document.properties), None


def _whole(body: str) -> list[NoteSection]:
    return [NoteSection(body.strip("\n").rstrip())] if body.strip() else []


def _is_markdown(record: dict, text: str) -> bool:
    path = record.get("file_path") or record.get("path") or ""
    if isinstance(path, str) and path.lower().endswith((".md", ".markdown")):
        return True
    return "[[" in text or text.lstrip().startswith("#") or "\n#" in text


def _summary(problems: list[str]) -> tuple[str, ...]:
    more = len(problems) - _PROBLEMS_SHOWN
    return (*problems[:_PROBLEMS_SHOWN], f"{more} more broken lines") if more > 0 else tuple(problems)
