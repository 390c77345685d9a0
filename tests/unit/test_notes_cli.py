"""gallery-app-cli notes add|list|search|remove: the summary and skipped files with reasons, a folder by its
number or path, every file-made text printed with its control characters escaped."""

from __future__ import annotations

import pytest

from gallery_app.cli import main
from gallery_app.core.models import loading
from tests.text_embedders import WordHashEmbedder


@pytest.fixture(autouse=True)
def word_hash_embedder(monkeypatch):
    embedder = WordHashEmbedder(max_tokens=512)
    monkeypatch.setattr(loading, "open_text_embedder", lambda setting=None, **kwargs: embedder)
    return embedder


@pytest.fixture
def notes(tmp_path):
    folder = tmp_path / "Notes"
    (folder / "house").mkdir(parents=True)
    (folder / "house" / "boiler.md").write_text("# Boiler\n\nThe boiler warranty runs until March 2027.\n",
                                                encoding="utf-8")
    (folder / "tea.txt").write_text("Sencha in the morning, never after six.\n", encoding="utf-8")
    (folder / "scan.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(20))
    (folder / "evil\x1b[31m.md").write_text("# Red\n\nA \x1b[2J name and text that must not clear the screen.\n",
                                            encoding="utf-8")
    return folder


def test_add_prints_the_summary_and_the_skipped_files(notes, capsys):
    assert main(["notes", "add", str(notes)]) == 0
    out = capsys.readouterr().out
    assert f"3 notes in {notes} (3 added); 1 skipped: unknown file type .png." in out
    assert "  skipped (unknown file type .png): scan.png" in out
    assert "\x1b" not in out
    assert main(["notes", "add", str(notes)]) == 0
    assert "(4 unchanged)" in capsys.readouterr().out


def test_list_shows_each_folder_its_kinds_and_its_skipped_files(notes, capsys):
    assert main(["notes", "list"]) == 0
    assert "No notes folders yet" in capsys.readouterr().out
    main(["notes", "add", str(notes)])
    capsys.readouterr()
    assert main(["notes", "list"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"   1  {notes}: 3 notes, 3 chunks (scanned ")
    assert "skipped (unknown file type .png): scan.png" in out
    assert "\x1b" not in out
    (notes / "export.jsonl").write_text('{"title": "A", "text": "alpha"}\n[1, 2]\n', encoding="utf-8")
    main(["notes", "add", str(notes)])
    capsys.readouterr()
    main(["notes", "list"])
    assert "  indexed without (line 2: not a JSON object): export.jsonl" in capsys.readouterr().out


def test_search_shows_the_best_chunks_with_file_and_heading(notes, capsys):
    main(["notes", "add", str(notes)])
    capsys.readouterr()
    assert main(["notes", "search", "when does the boiler warranty end", "-k", "2"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert "house/boiler.md · boiler › Boiler" in first
    assert "The boiler warranty runs until March 2027." in out
    assert "\x1b" not in out
    assert main(["notes", "search", "a name and text that must not clear the screen", "-k", "1"]) == 0
    out = capsys.readouterr().out
    assert "evil\\x1b[31m.md" in out and "A \ufffd[2J name" in out and "\x1b" not in out
    assert main(["notes", "search", "boiler", "--folder", str(notes)]) == 0
    assert main(["notes", "search", "boiler", "--folder", "7"]) == 1
    assert "7 is not a notes folder" in capsys.readouterr().err


def test_search_refuses_a_bad_count(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["notes", "search", "boiler", "-k", "0"])
    assert exit_.value.code == 2
    assert "not a whole number from 1 to" in capsys.readouterr().err


def test_remove_by_number_or_path_forgets_the_folder(notes, tmp_path, capsys):
    main(["notes", "add", str(notes)])
    other = tmp_path / "Other"
    other.mkdir()
    (other / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    main(["notes", "add", str(other)])
    capsys.readouterr()
    assert main(["notes", "remove", "1"]) == 0
    assert f"Removed the notes folder {notes} (3 notes)" in capsys.readouterr().out
    assert main(["notes", "remove", str(other)]) == 0
    assert main(["notes", "remove", str(other)]) == 1
    assert "is not a notes folder" in capsys.readouterr().err
    main(["notes", "list"])
    assert "No notes folders yet" in capsys.readouterr().out
    assert notes.joinpath("tea.txt").exists()  # the files themselves stay


def test_a_folder_that_is_not_there_is_an_error_not_a_traceback(tmp_path, capsys):
    assert main(["notes", "add", str(tmp_path / "missing")]) == 1
    assert "does not exist" in capsys.readouterr().err
