"""The answer instructions: the rules the model is given and where the messages and the question go.

A person may replace them (Settings → Answer instructions, ``--instructions FILE``). The text is a
template with two slots, ``{context}`` (the numbered passages) and ``{question}``; ``{{`` and ``}}``
write a brace itself. The template is parsed once into literal pieces and slots, and a prompt is made by
putting the passages and the question in the slots' places: chat text is never read as a template, so
a message or a question that contains ``{question}`` or ``{0}`` is only those characters.

The paragraphs before the first slot's paragraph are the rules (a chat model's system message); the rest
is the request (its user turn). A base model continues a Q/A transcript, so for it the line holding
``{question}`` becomes the transcript's last ``Q:``; that is why the two slots must sit on different lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from gallery_app.core.errors import AppError

SYSTEM_PROMPT = (
    "You answer questions about the user's own chat messages.\n"
    "Use only the context messages below. Each context line starts with the name of the person who wrote it, "
    "then a colon: that person said it.\n"
    "Never name a person who does not appear in the context.\n"
    "Answer in one short sentence, then write the number of the passage you used, like [1].\n"
    "If the context does not contain the answer, reply exactly: I don't know."
)
#: The app's own instructions: the prompt they make is the one docs/chat.md measured.
DEFAULT_INSTRUCTIONS = SYSTEM_PROMPT + "\n\nContext:\n{context}\n\nQuestion: {question}"

#: Each slot and what it stands for, in the words the error messages use.
SLOTS = {"context": "where the messages found go", "question": "where the question goes"}
SLOT_NAMES = " and ".join(f"{{{name}}}" for name in SLOTS)
BRACE_HINT = "To write a brace itself, double it: {{ or }}."

#: A template is read as these tokens; a brace outside an escape or a slot is a mistake worth naming.
_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}\n]*)\}|[{}]")
_BLANK_LINE = re.compile(r"\n[ \t]*\n\s*")


class InvalidInstructions(AppError):
    """Answer instructions that cannot make a prompt: a slot missing, unknown or repeated, a lone brace."""


@dataclass(frozen=True)
class Slot:
    name: str


Piece = str | Slot


@dataclass(frozen=True)
class Instructions:
    """A valid template, split where a prompt needs it."""

    text: str
    #: The rules: a chat model's system message (braces unescaped; no slots).
    rules: str
    #: A chat model's user turn.
    request: tuple[Piece, ...]
    #: A base model's request: without the line holding ``{question}``, which its transcript asks.
    completion_request: tuple[Piece, ...]

    @property
    def is_default(self) -> bool:
        return self.text == DEFAULT_INSTRUCTIONS


def fill(pieces: tuple[Piece, ...], values: dict[str, str]) -> str:
    # Joined, never formatted: what goes into a slot is not read again.
    return "".join(values[piece.name] if isinstance(piece, Slot) else piece for piece in pieces)


def instructions_problem(text: str) -> str | None:
    """What is wrong with ``text`` as answer instructions, in a sentence that names it; None when it works."""
    if not text.strip():
        return f"The answer instructions are empty. They need {_needs(SLOTS)}."
    found: dict[str, list[int]] = {name: [] for name in SLOTS}
    unknown: list[str] = []
    for match in _TOKEN.finditer(text):
        token, name = match.group(0), match.group(1)
        line = text.count("\n", 0, match.start()) + 1
        if token in ("{{", "}}"):
            continue
        if name is None:  # a lone brace
            return f"The answer instructions have a lone “{token}” on line {line}. {BRACE_HINT}"
        if name in SLOTS:
            found[name].append(line)
        elif token not in unknown:
            unknown.append(token)
    if unknown:
        close = [f"{{{name.strip().lower()}}}" for name in (u[1:-1] for u in unknown) if name.strip().lower() in SLOTS]
        suggestion = f" Did you mean {' or '.join(dict.fromkeys(close))}?" if close else ""
        verdict = "is not a slot" if len(unknown) == 1 else "are not slots"
        return (f"The answer instructions use {_and(unknown)}, which {verdict}: only {SLOT_NAMES} are filled in."
                f"{suggestion} {BRACE_HINT}")
    missing = {name: purpose for name, purpose in SLOTS.items() if not found[name]}
    if missing:
        return f"The answer instructions need {_needs(missing)}."
    for name, lines in found.items():
        if len(lines) > 1:
            where = _and([str(n) for n in lines])
            return f"The answer instructions use {{{name}}} {len(lines)} times (lines {where}); it must appear once."
    if found["context"] == found["question"]:
        return (f"The answer instructions have {{context}} and {{question}} on one line (line {found['context'][0]}); "
                "put them on different lines.")
    return None


def parse_instructions(text: str) -> Instructions:
    """``text`` as a template, or ``InvalidInstructions`` saying what is wrong with it."""
    problem = instructions_problem(text)
    if problem:
        raise InvalidInstructions(problem)
    first_slot = next(m.start() for m in _TOKEN.finditer(text) if m.group(1) in SLOTS)
    breaks = list(_BLANK_LINE.finditer(text, 0, first_slot))
    rules_source, request_source = ((text[:breaks[-1].start()], text[breaks[-1].end():]) if breaks else ("", text))
    lines = request_source.strip().split("\n")
    question_line = next(i for i, line in enumerate(lines) if _slots_in(line) == ["question"])
    completion_source = _one_blank_line_at_most(lines[:question_line] + lines[question_line + 1:])
    rules = "".join(piece for piece in _pieces(rules_source.strip()) if isinstance(piece, str))
    return Instructions(text, rules, tuple(_pieces(request_source.strip())), tuple(_pieces(completion_source)))


def read_instructions(path: str | Path) -> Instructions:
    """Answer instructions from a UTF-8 text file (the CLI's ``--instructions FILE``)."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise InvalidInstructions(f"The instructions file {path} does not exist.",
                                  hint="Nothing was asked. Give --instructions a UTF-8 text file.") from None
    except IsADirectoryError:
        raise InvalidInstructions(f"The instructions file {path} is a folder, not a text file.",
                                  hint="Nothing was asked. Give --instructions a UTF-8 text file.") from None
    except OSError as error:
        raise InvalidInstructions(f"The instructions file {path} could not be read ({error.strerror or error}).",
                                  hint="Nothing was asked.") from None
    except UnicodeDecodeError as error:
        raise InvalidInstructions(f"The instructions file {path} is not UTF-8 text "
                                  f"(its byte {error.start + 1} is not).",
                                  hint="Nothing was asked. Save it as UTF-8 and try again.") from None
    # Editors end files with a newline; the prompt should not gain a blank line for it.
    text = text.replace("\r\n", "\n").rstrip("\n")
    try:
        return parse_instructions(text)
    except InvalidInstructions as error:
        raise InvalidInstructions(f"{path}: {error.message}",
                                  hint="Nothing was asked. Without --instructions the app's own are used.") from None


def _pieces(source: str) -> list[Piece]:
    pieces: list[Piece] = []
    end = 0
    for match in _TOKEN.finditer(source):
        pieces.append(source[end:match.start()])
        token = match.group(0)
        pieces.append(token[0] if token in ("{{", "}}") else Slot(match.group(1)))
        end = match.end()
    pieces.append(source[end:])
    merged: list[Piece] = []
    for piece in pieces:
        if isinstance(piece, str) and merged and isinstance(merged[-1], str):
            merged[-1] += piece
        elif piece != "":
            merged.append(piece)
    return merged


def _slots_in(line: str) -> list[str]:
    return [m.group(1) for m in _TOKEN.finditer(line) if m.group(1) is not None]


def _one_blank_line_at_most(lines: list[str]) -> str:
    kept: list[str] = []
    for line in lines:
        if not line.strip() and (not kept or not kept[-1].strip()):
            continue
        kept.append(line)
    return "\n".join(kept).strip()


def _needs(slots: dict[str, str]) -> str:
    return _and([f"{{{name}}} ({purpose})" for name, purpose in slots.items()])


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
