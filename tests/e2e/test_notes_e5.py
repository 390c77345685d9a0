"""A small copy of the real notes_qa folder (two vault notes, a PDF, a Word handout) indexed with the real
multilingual e5: chunks within its window by its own tokenizer, PDF pages kept, and questions asked as a
person would find the chunk holding the gold quote."""

from __future__ import annotations

import re
import shutil
import unicodedata

import pytest

from gallery_app.core.notes.indexer import index_folder
from gallery_app.core.notes.search import search_notes

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.shared_fixtures]

FILES = ("Vault of Knowledge/03. Culture/Food and Drinks/Coffee.md",
         "Vault of Knowledge/01. Personal/AVIASYS Related/Teams.md",
         "documents/github-git-cheat-sheet.pdf",
         "documents/handouts/Carpentries_MotivationDemotivation.docx")
QUESTIONS = [  # notes_qa's n04, n03, n25 and n26
    ("What proportion of espresso to water did I write down for an Americano?", FILES[0],
     "Americano (1:2 ratio of Espresso:Water)"),
    ("Who did I assign to the hardware team at AVIASYS?", FILES[1], "Team - Shonu, Sander"),
    ("Which git command shows the history of a single file, including when it was renamed?", FILES[2],
     "Lists version history for a file, including renames"),
    ("Which word does my teaching handout tell instructors to stop saying, because it makes learners feel their "
     "problem is trivial?", FILES[3], "Use the J word (“just”)."),
]


def normal(text: str) -> str:
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip()


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, e5):
    from tests.conftest import require_shared_fixtures
    from gallery_app.core.store import open_store

    source = require_shared_fixtures() / "notes_qa" / "folder"
    folder = tmp_path_factory.mktemp("notes") / "vault"
    for relative in FILES:
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / relative, folder / relative)
    conn = open_store(tmp_path_factory.mktemp("db") / "gallery.db")
    summary = index_folder(conn, folder, e5)
    yield conn, folder, summary
    conn.close()


def test_the_copy_is_indexed_per_kind_within_the_embedders_window(indexed, e5):
    conn, folder, summary = indexed
    assert summary.describe().startswith(f"2 notes, 1 PDF (2 pages), 1 Word file in {folder} (4 added)")
    rows = conn.execute("SELECT context, text, tokens, page, f.kind FROM note_chunks c "
                        "JOIN note_files f ON f.id = c.file_id").fetchall()
    for context, text, tokens, page, kind in rows:
        assert tokens == e5.count_tokens(f"{context}\n{text}" if text else context) <= 256
        assert (page is not None) == (kind == "pdf")


@pytest.mark.parametrize("question, relative, quote", QUESTIONS)
def test_a_question_finds_the_chunk_that_holds_its_answer(indexed, e5, question, relative, quote):
    conn, folder, _summary = indexed
    hits = search_notes(conn, e5, question, k=3)
    assert any(hit.path == folder / relative and normal(quote) in normal(hit.text) for hit in hits), \
        [(hit.chunk.relative_path, hit.text[:80]) for hit in hits]
