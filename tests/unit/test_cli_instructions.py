"""`chat ask` and `chat repl` with `--instructions FILE`: the file's rules reach the prompt; a file that cannot
make one is refused by what is wrong with it, before any model is loaded, with a non-zero exit."""

from __future__ import annotations

import pytest

from gallery_app.cli import main
from gallery_app.core import paths
from gallery_app.core.chat.importer import import_chat
from gallery_app.core.models import loading
from gallery_app.core.store import open_store
from tests.chat_helpers import DEMO_CHAT, HashEmbedder, ScriptedLLM

RULES = "Answer like a ship's captain, from the messages only.\n\nLog:\n{context}\n\nOrders: {question}\n"


@pytest.fixture
def stand_in_models(monkeypatch):
    """The demo chat imported with the word-hashing embedder, and both models as stand-ins."""
    embedder, llm = HashEmbedder(), ScriptedLLM(["Daniel paid [1]."])
    conn = open_store(paths.database_path())
    import_chat(conn, DEMO_CHAT, embedder)
    conn.close()
    monkeypatch.setattr(loading, "open_text_embedder", lambda *args, **kwargs: embedder)
    monkeypatch.setattr(loading, "open_chat_llm", lambda *args, **kwargs: llm)
    return llm


@pytest.fixture
def no_models(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded for instructions that were refused")

    monkeypatch.setattr(loading, "open_text_embedder", refuse)
    monkeypatch.setattr(loading, "open_chat_llm", refuse)


def test_ask_lays_the_prompt_out_as_the_file_says(tmp_path, stand_in_models, capsys):
    rules = tmp_path / "captain.txt"
    rules.write_text(RULES, "utf-8")
    assert main(["chat", "ask", "Who paid for the hotel?", "--instructions", str(rules), "--show-prompt"]) == 0
    out = capsys.readouterr().out
    prompt = out[out.index("── prompt sent"):]
    assert "<|system|>\nAnswer like a ship's captain, from the messages only.\n<|user|>\nLog:\n[1] " in prompt
    assert "\n\nOrders: Who paid for the hotel?\n<|assistant|>" in prompt
    assert "You answer questions about the user's own chat messages" not in prompt


def test_without_the_option_the_apps_own_instructions_are_used(stand_in_models, capsys):
    assert main(["chat", "ask", "Who paid for the hotel?", "--show-prompt"]) == 0
    assert "You answer questions about the user's own chat messages" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["ask", "repl"])
@pytest.mark.parametrize("content,named", [
    ("Be brief.\n\n{context}\n", "need {question} (where the question goes)"),
    ("{context}\n{question}\nin {language}\n", "{language}, which is not a slot"),
    ("{context} {question}", "on one line (line 1)"),
    (b"\xff\xfe{\x00c\x00", "is not UTF-8 text"),
    (None, "does not exist"),
])
def test_a_bad_instructions_file_is_an_error_naming_it(tmp_path, no_models, capsys, command, content, named):
    rules = tmp_path / "rules.txt"
    if isinstance(content, bytes):
        rules.write_bytes(content)
    elif content is not None:
        rules.write_text(content, "utf-8")
    argv = ["chat", command, *(["Who paid?"] if command == "ask" else []), "--instructions", str(rules)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"Error: {rules}") or err.startswith(f"Error: The instructions file {rules}"), err
    assert named in err and "Nothing was asked" in err and "Traceback" not in err
