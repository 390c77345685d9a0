"""gallery-app-cli chat: parse, import, list, ask and repl, as a person runs them."""

from __future__ import annotations

import io
import json

import pytest

from gallery_app.cli import main
from tests.chat_helpers import DEMO_CHAT

pytestmark = pytest.mark.e2e
EMBEDDER = ["--embedder", "all-minilm-l6-v2-int8"]


def test_parse_prints_json_lines(capsys):
    assert main(["chat", "parse", str(DEMO_CHAT)]) == 0
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 432 and "432 messages" in err
    assert set(rows[0]) == {"ts", "sender", "text", "kind", "attachment", "caption", "line"}
    assert rows[0]["kind"] == "system" and rows[0]["sender"] is None and rows[0]["line"] == 1
    paid = next(r for r in rows if r["text"].startswith("I put the room on my card"))
    assert paid == {"ts": "2024-06-04T09:36:25", "sender": "Daniel", "kind": "text", "attachment": None,
                    "caption": None, "line": 320, "text": "I put the room on my card, we can sort it out later"}
    assert any(r["attachment"] == "00000031-PHOTO-2024-06-14-10-22-05.jpg" for r in rows)
    assert {r["kind"] for r in rows} == {"text", "system", "media", "deleted"}


def test_parse_json_tells_an_attachments_caption_from_its_file_line(capsys, tmp_path):
    export = tmp_path / "_chat.txt"
    export.write_text("[14/06/2024, 10:22:05] Maya: \u200e<attached: 00000031-PHOTO-2024-06-14-10-22-05.jpg>\n"
                      "[14/06/2024, 10:23:00] Maya: view from the cottage \u200e<attached: 00000032-PHOTO-2024-06-14-10-23-00.jpg>\n",
                      "utf-8")
    assert main(["chat", "parse", str(export)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["attachment"], r["caption"]) for r in rows] == [
        ("00000031-PHOTO-2024-06-14-10-22-05.jpg", ""), ("00000032-PHOTO-2024-06-14-10-23-00.jpg", "view from the cottage")]


def test_parse_says_which_date_order_it_chose_and_why_and_reports_contradictions(capsys, tmp_path):
    export = tmp_path / "_chat.txt"
    export.write_text("12/9/20, 10:00 PM - Bob: hi\n12/9/20, 10:01 PM - Ann: <Media omitted>\n"
                      "12/9/20, 10:02 PM - Ann: ok\n", "utf-8")
    assert main(["chat", "parse", str(export)]) == 0
    err = capsys.readouterr().err
    assert "date order MDY because no date in the file tells day from month; the export is in English" in err
    export.write_text("2/1/20, 10:00 - Bob: hi\n3/1/20, 10:01 - Ann: ok\n4/1/20, 10:01 - Ann: ok\n"
                      "5/1/20, 10:01 - Ann: ok\n3/13/20, 10:00 - Bob: read month first only\n", "utf-8")
    assert main(["chat", "parse", str(export)]) == 0
    err = capsys.readouterr().err
    assert "4 messages; date order DMY" in err
    assert ("line 5: 3/13/20, 10:00 - Bob: read month first only — not a date read day first, as the file's "
            "other dates are; kept as text of the message above") in err


def test_chat_list_shows_a_senders_terminal_escapes_instead_of_obeying_them(capsys, tmp_path):
    hostile = "\x1b]52;c;cHduZWQ=\x07\x1b]0;PWNED\x07\x1b[2J"
    export = tmp_path / "_chat.txt"
    export.write_text(f"04/06/2024, 09:30 - Maya: hi\n04/06/2024, 09:31 - {hostile}Bob: hello\n", "utf-8")
    assert main(["chat", "import", str(export), *EMBEDDER]) == 0
    capsys.readouterr()
    assert main(["chat", "list"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "PWNED" in out  # shown, not obeyed


def test_import_list_ask_and_repl(capsys, monkeypatch):
    assert main(["chat", "import", str(DEMO_CHAT), *EMBEDDER]) == 0
    assert "Imported “Weekend away”: 431 messages" in capsys.readouterr().out
    assert main(["chat", "import", str(DEMO_CHAT), *EMBEDDER]) == 0
    assert "already up to date" in capsys.readouterr().out
    assert main(["chat", "list"]) == 0
    assert "Weekend away (431 messages, 03 Apr 2024 – 10 Jul 2024; Maya, Daniel)" in capsys.readouterr().out

    assert main(["chat", "ask", "What was the key safe code at the cottage?", *EMBEDDER, "--show-prompt"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Found 6 passages in 1 chat") and "4418" in out
    assert "── prompt sent (" in out and "Question: What was the key safe code at the cottage?" in out

    monkeypatch.setattr("sys.stdin", io.StringIO("Who ended up paying for the hotel?\nHow much was it?\n/quit\n"))
    assert main(["chat", "repl", *EMBEDDER]) == 0
    out = capsys.readouterr().out
    assert "searched for: Who ended up paying for the hotel? How much was it?" in out  # the follow-up used history
    assert "£340" in out


def test_importing_a_wrong_file_is_a_clear_error(capsys, tmp_path):
    photo = tmp_path / "cat.jpg"
    photo.write_bytes(b"\xff\xd8\xff\xe0 jpeg")
    assert main(["chat", "import", str(photo), *EMBEDDER]) == 1
    assert "not a WhatsApp export" in capsys.readouterr().err


def test_a_text_file_without_messages_is_refused_and_no_empty_chat_is_left(capsys, tmp_path):
    """Before: it was "imported" as a chat with 0 messages."""
    notes = tmp_path / "notes.txt"
    notes.write_text("shopping: milk, eggs\nremember to call Sam\n", "utf-8")
    assert main(["chat", "import", str(notes), *EMBEDDER]) == 1
    assert "No WhatsApp messages were found in notes.txt" in capsys.readouterr().err
    assert main(["chat", "list"]) == 0
    assert "No chats imported yet" in capsys.readouterr().out
