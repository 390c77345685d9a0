"""`chat ask` and `chat repl` when the language model's process dies mid-answer: the passages stay printed,
one sentence says what happened, and the next question is answered by a fresh process."""

from __future__ import annotations

import signal

import pytest

from gallery_app import cli
from gallery_app.core import paths
from gallery_app.core.chat.importer import import_chat
from gallery_app.core.store import open_store
from tests.chat_helpers import DEMO_CHAT
from tests.llm_crash import crash_in_the_next_answer

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
QUESTION = "Who ended up paying for the hotel?"
OPTIONS = ["--embedder", "all-minilm-l6-v2-int8", "--answer-tokens", "48"]


@pytest.fixture
def demo_imported(minilm):
    conn = open_store(paths.database_path())
    import_chat(conn, DEMO_CHAT, minilm)
    conn.close()


@pytest.mark.parametrize("sig, said", [(signal.SIGSEGV, "signal 11, SIGSEGV"), (signal.SIGKILL, "signal 9, SIGKILL")])
def test_chat_ask_reports_a_crashed_model_and_the_next_ask_answers(demo_imported, monkeypatch, capsys, sig, said):
    killed = crash_in_the_next_answer(monkeypatch, sig)
    assert cli.main(["chat", "ask", QUESTION, *OPTIONS]) == 1
    out, err = capsys.readouterr()
    assert killed
    assert "Found 6 passages in 1 chat" in out and "Weekend away" in out  # the passages were printed before the answer began
    assert f"Error: The language model stopped unexpectedly ({said}" in err and "Your chats are safe." in err
    assert "Traceback" not in err

    assert cli.main(["chat", "ask", QUESTION, *OPTIONS]) == 0
    out, err = capsys.readouterr()
    assert "stopped unexpectedly" not in out + err
    assert "Sources: [" in out or "couldn't" in out.lower()  # an answer (or a checked decline) was written


def test_the_repl_survives_a_crashed_model_and_answers_the_next_question(demo_imported, monkeypatch, capsys):
    crash_in_the_next_answer(monkeypatch, signal.SIGSEGV)
    typed = iter([QUESTION, QUESTION, "/quit"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(typed))
    assert cli.main(["chat", "repl", *OPTIONS]) == 0
    out, err = capsys.readouterr()
    assert err.count("The language model stopped unexpectedly (signal 11, SIGSEGV). Your chats are safe.") == 1
    assert out.count("Weekend away") >= 2  # both questions printed their passages
