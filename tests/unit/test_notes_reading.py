"""A note passage read back in its document for the window's viewer (core/notes/reading.py): its span in the
loaded text, found again after an edit moved it, gone after one removed it, a JSONL line's own note; and which
dropped folders are notes folders (core/folder_kind.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gallery_app.core.errors import AppError
from gallery_app.core.folder_kind import mostly_notes
from gallery_app.core.notes import repository
from gallery_app.core.notes.indexer import index_folder
from gallery_app.core.notes.reading import read_passage
from gallery_app.core.store import open_store
from tests.text_embedders import WordHashEmbedder

BOILER = ("# House\n\nNotes on the house, its rooms, what was repaired and when, and who to call.\n\n## Boiler\n\n"
          "The boiler warranty runs until March 2027; the installer is Kessler & Sons, who also service it every "
          "October and keep the spare parts.\n\n## Garden\n\nThe hedge is cut in June and again in September, "
          "by the neighbour's gardener, who is paid in cash.\n")


@pytest.fixture
def library(tmp_path):
    folder = tmp_path / "Notes"
    folder.mkdir()
    (folder / "house.md").write_text(BOILER, "utf-8")
    (folder / "log.jsonl").write_text('{"title": "Kettle", "text": "Descale the kettle monthly."}\n'
                                      "not json\n"
                                      '{"title": "Bikes", "text": "The bike lock code is in the drawer."}\n', "utf-8")
    conn = open_store(tmp_path / "gallery.db")
    # A small window, so that the house note is cut into several chunks.
    index_folder(conn, folder, WordHashEmbedder(max_tokens=48))
    yield conn, folder
    conn.close()


def chunks(conn, name: str):
    file_id = next(f.id for f in repository.files_in_folder(conn, 1).values() if f.relative_path == name)
    return repository.chunks_of_file(conn, file_id)


def test_a_passage_is_its_span_of_the_loaded_text(library):
    conn, folder = library
    stored = chunks(conn, "house.md")
    assert len(stored) > 1
    for chunk in stored:
        passage = read_passage(conn, chunk.id)
        assert passage.found and passage.text[passage.start:passage.end] == chunk.text
        assert passage.title == "house" and passage.path == folder / "house.md" and passage.kind == "markdown"


def test_an_edit_that_moved_the_passage_finds_it_again_and_one_that_removed_it_says_so(library):
    conn, folder = library
    garden = next(chunk for chunk in chunks(conn, "house.md") if "hedge" in chunk.text)
    (folder / "house.md").write_text("# House\n\nA new first paragraph, written since.\n\n" + BOILER[8:], "utf-8")
    passage = read_passage(conn, garden.id)
    assert passage.found and passage.start > garden.start and passage.text[passage.start:passage.end] == garden.text
    (folder / "house.md").write_text("# House\n\nNothing about the garden any more.\n", "utf-8")
    assert not read_passage(conn, garden.id).found
    (folder / "house.md").unlink()
    with pytest.raises(AppError, match="house.md cannot be opened: the file is gone"):
        read_passage(conn, garden.id)


def test_a_jsonl_passage_is_shown_in_its_own_lines_note(library):
    conn, _folder = library
    bikes = next(chunk for chunk in chunks(conn, "log.jsonl") if "bike" in chunk.text)
    passage = read_passage(conn, bikes.id)
    assert passage.title == "Bikes" and "kettle" not in passage.text and passage.found


def test_a_passage_no_longer_in_the_library_is_said_plainly(library):
    conn, _folder = library
    with pytest.raises(AppError, match="no longer in the library"):
        read_passage(conn, 10_000)


def test_a_folder_is_a_notes_folder_when_it_holds_more_notes_than_photos(tmp_path):
    def folder(name: str, files: list[str]) -> Path:
        root = tmp_path / name
        for relative in files:
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            (root / relative).write_bytes(b"x")
        return root

    assert mostly_notes(folder("vault", ["a.md", "b/c.md", "scan.jpg", "d.PDF"]))
    assert not mostly_notes(folder("holiday", ["1.jpg", "2.HEIC", "list.txt"]))
    assert not mostly_notes(folder("empty", []))  # as dropped folders always went: to the photos
    assert not mostly_notes(folder("tie", ["a.md", "a.png"]))
    assert not mostly_notes(folder("hidden", [".obsidian/x.md", ".obsidian/y.md", "a.png"]))
    # Only the first files are looked at: the folder's own before its subfolders'.
    many = folder("many", [f"{n}.md" for n in range(30)] + [f"z/{n}.jpg" for n in range(40)])
    assert mostly_notes(many, limit=30) and not mostly_notes(many)
