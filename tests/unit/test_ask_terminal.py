"""What `chat ask` leaves on a terminal, and in a pipe, is the checked answer (as the window shows it).

A stand-in LLM writes what it is told, so the grounding check's verdict is exact; the terminal is a
tiny emulator of the few control sequences the CLI writes (wrap, newline, return, up, erase, colour).
"""

from __future__ import annotations

import io
import re

import pytest

from gallery_app import cli_chat
from gallery_app.core.chat.ask_options import AskOptions
from gallery_app.core.chat.importer import import_chat
from gallery_app.core.chat.session import UNSUPPORTED, ChatSession
from gallery_app.core.store import open_store
from tests.chat_helpers import DEMO_CHAT, HashEmbedder, ScriptedLLM

QUESTION = "Who put the room on the card?"
COLUMNS = 20


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def screen(output: str, columns: int = COLUMNS) -> str:
    """The text a terminal of ``columns`` shows after ``output`` (enough of VT100 for the CLI)."""
    rows, row, col = [[]], 0, 0
    for token in re.findall(r"\x1b\[\d*[A-Za-z]|.|\n", output, re.S):
        if token == "\n":
            row, col = row + 1, 0
        elif token == "\r":
            col = 0
        elif token.startswith("\x1b["):
            if token.endswith("A"):
                row = max(0, row - int(token[2:-1] or 1))
            elif token.endswith("J"):
                del rows[row + 1:]
                rows[row] = rows[row][:col]
            continue  # colours change nothing that is read
        else:
            if col == columns:
                row, col = row + 1, 0
            while len(rows) <= row:
                rows.append([])
            line = rows[row]
            line[col:col + 1] = [token]
            col += 1
            continue
        while len(rows) <= row:
            rows.append([])
    return "\n".join("".join(line) for line in rows)


@pytest.fixture(scope="module")
def demo_conn(tmp_path_factory):
    conn = open_store(tmp_path_factory.mktemp("demo") / "gallery.db")
    import_chat(conn, DEMO_CHAT, HashEmbedder())
    yield conn
    conn.close()


def run_ask(demo_conn, pieces, stream, monkeypatch) -> str:
    monkeypatch.setattr("sys.stdout", stream)
    monkeypatch.setenv("COLUMNS", str(COLUMNS))
    monkeypatch.setenv("TERM", "xterm")
    session = ChatSession(demo_conn, HashEmbedder(), ScriptedLLM(pieces), AskOptions(passages=2))
    cli_chat._ask(session, QUESTION, show_prompt=False)
    return stream.getvalue()


def test_on_a_terminal_a_declined_answer_replaces_what_streamed(demo_conn, monkeypatch):
    out = run_ask(demo_conn, ["The room was paid ", "by Ryanair ", "on the Tuesday [1]."], Terminal(), monkeypatch)
    assert "\x1b[2mThe room was paid by Ryanair on the Tuesday [1]." in out  # it streamed, dim: not checked yet
    shown = screen(out)
    assert "Ryanair" not in shown
    answer = shown.split("\n\n")[-1]
    assert answer.replace("\n", "").startswith((UNSUPPORTED + "Closest message:").replace("\n", ""))


def test_on_a_terminal_a_supported_answer_stays_and_escapes_are_shown_not_obeyed(demo_conn, monkeypatch):
    out = run_ask(demo_conn, ["Daniel paid\x1b[H", " for it [1]."], Terminal(), monkeypatch)
    shown = screen(out)
    assert "\x1b[H" not in out
    assert shown.split("\n\n")[-1].replace("\n", "").startswith("Daniel paid\ufffd[H for it [1].Sources: [1]")


def test_in_a_pipe_only_the_checked_answer_is_printed(demo_conn, monkeypatch):
    out = run_ask(demo_conn, ["The room was paid ", "by Ryanair [1]."], io.StringIO(), monkeypatch)
    assert "Ryanair" not in out and "\x1b" not in out
    assert out.split("\n\n")[-1].startswith(f"{UNSUPPORTED}\nClosest message: ")
