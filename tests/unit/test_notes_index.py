"""Indexing a notes folder: incremental rescans (edit, touch, rename, delete → only that file embedded),
every skip reported with its reason, a transaction per file (killed mid-index → the same rows after a
re-run), removal, search, and the embedder switch. The real loaders read the files; the embedder is the
deterministic word-hash one (tests/text_embedders.py), which records what it was asked to embed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gallery_app.core.chat.embedder_switch import switch_embedder
from gallery_app.core.errors import AppError
from gallery_app.core.models import choices
from gallery_app.core.models.specs import Role
from gallery_app.core.notes import repository
from gallery_app.core.notes.documents import NoteSkipped
from gallery_app.core.notes.indexer import NotesIndexer, index_folder
from gallery_app.core.notes.search import search_notes
from gallery_app.core.store import get_vector_table, open_store
from tests.conftest import REPO
from tests.text_embedders import WordHashEmbedder

NOTES = {
    "house/boiler.md": "# Boiler\n\nThe boiler warranty runs until March 2027; the installer is Kessler & Sons.\n\n"
                       "## Service\n\nAnnual service every October, booked by phone.\n",
    "coffee.md": "# Coffee\n\nBrewing gear: a V60, a Gaggia Classic and a hand grinder.\n\n## Beans\n\n"
                 "Ethiopian beans from the market on Saturdays.\n",
    "cheats/tar.txt": "---\nsyntax: bash\n---\n# extract a gzip archive\ntar -xzvf archive.tar.gz\n",
    "trips/japan.md": "# Japan 2023\n\nKyoto for three days, then Fushimi Inari at dawn.\n",
}


@pytest.fixture
def embedder():
    return WordHashEmbedder(max_tokens=512, passage_prefix="passage: ")


@pytest.fixture
def folder(tmp_path) -> Path:
    root = tmp_path / "Notes"
    for relative, text in NOTES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def state(conn) -> dict:
    """Everything indexing writes, in a form two runs can be compared by (ids aside)."""
    files = sorted(conn.execute("SELECT relative_path, size, content_hash, kind, documents, state, skip_reason "
                                "FROM note_files").fetchall())
    chunks = sorted(conn.execute("SELECT f.relative_path, c.ordinal, c.context, c.text, c.start_offset, "
                                 "c.end_offset FROM note_chunks c JOIN note_files f ON f.id = c.file_id").fetchall())
    tables = [t for t in repository.list_vector_tables(conn) if t.kind == repository.NOTE_KIND]
    vectors = {t.name: conn.execute(f"SELECT count(*) FROM {t.name}").fetchone()[0] for t in tables}
    conn.execute("INSERT INTO note_chunks_fts(note_chunks_fts) VALUES ('integrity-check')")  # raises if out of step
    return {"files": files, "chunks": chunks, "vectors": vectors}


def chunk_ids(conn, relative: str) -> list[int]:
    return [row[0] for row in conn.execute(
        "SELECT c.id FROM note_chunks c JOIN note_files f ON f.id = c.file_id WHERE f.relative_path = ? "
        "ORDER BY c.ordinal", (relative,))]


def vector_ids(conn, embedder) -> set[int]:
    table = get_vector_table(conn, repository.NOTE_KIND, embedder.model_key)
    return {row[0] for row in conn.execute(f"SELECT rowid FROM {table.name}")}


def test_a_folder_is_indexed_with_a_summary_per_kind(store, folder, embedder):
    summary = index_folder(store, folder, embedder)
    assert (summary.found, summary.added, summary.skipped) == (4, 4, [])
    assert summary.describe() == f"4 notes in {folder} (4 added)."
    assert summary.chunks == len(embedder.passages) == store.execute("SELECT count(*) FROM note_chunks").fetchone()[0]
    assert vector_ids(store, embedder) == {row[0] for row in store.execute("SELECT id FROM note_chunks")}
    # Every embedded text starts with its context line, as a chat line starts with its sender (the title is the
    # file's name; a heading the text starts with is said there, not twice); short sections share a chunk.
    assert ("boiler\n# Boiler\n\nThe boiler warranty runs until March 2027; the installer is Kessler & Sons.\n"
            "## Service\n\nAnnual service every October, booked by phone.") in embedder.passages
    assert "Japan 2023\n# Japan 2023" not in "".join(embedder.passages)
    assert max(embedder.batches) <= 32


def test_unchanged_files_are_neither_read_nor_embedded_again(store, folder, embedder):
    index_folder(store, folder, embedder)
    before = state(store)
    embedder.forget()
    loaded = []
    indexer = NotesIndexer(store, embedder)
    real_load = indexer.load
    indexer.load = lambda path, **kwargs: loaded.append(path) or real_load(path, **kwargs)
    summary = indexer.index_folder(folder)
    assert (summary.unchanged, summary.added, summary.changed, loaded, embedder.passages) == (4, 0, 0, [], [])
    assert state(store) == before


def test_an_edited_file_alone_is_chunked_and_embedded_again(store, folder, embedder):
    index_folder(store, folder, embedder)
    others = {name: chunk_ids(store, name) for name in NOTES if name != "coffee.md"}
    embedder.forget()
    (folder / "coffee.md").write_text(NOTES["coffee.md"] + "\n## Water\n\nSoft water, 94 degrees.\n", encoding="utf-8")
    summary = index_folder(store, folder, embedder)
    assert (summary.changed, summary.unchanged) == (1, 3)
    assert embedder.passages and all(text.startswith("coffee\n") for text in embedder.passages)
    assert len(embedder.passages) == len(chunk_ids(store, "coffee.md")) == 1
    assert "Soft water, 94 degrees." in embedder.passages[0]
    assert {name: chunk_ids(store, name) for name in others} == others  # the others' rows are untouched
    assert vector_ids(store, embedder) == {row[0] for row in store.execute("SELECT id FROM note_chunks")}


def test_a_touched_file_with_the_same_content_is_only_restamped(store, folder, embedder):
    index_folder(store, folder, embedder)
    ids = chunk_ids(store, "coffee.md")
    embedder.forget()
    os.utime(folder / "coffee.md", (1_700_000_000, 1_700_000_000))
    summary = index_folder(store, folder, embedder)
    assert (summary.unchanged, summary.changed, embedder.passages) == (4, 0, [])
    assert chunk_ids(store, "coffee.md") == ids
    stored = repository.files_in_folder(store, 1)["coffee.md"]
    assert stored.mtime_ns == 1_700_000_000 * 10**9


def test_a_renamed_or_moved_file_keeps_its_chunks_and_vectors(store, folder, embedder):
    index_folder(store, folder, embedder)
    ids = chunk_ids(store, "house/boiler.md")
    embedder.forget()
    (folder / "archive").mkdir()
    (folder / "house" / "boiler.md").rename(folder / "archive" / "old boiler.md")
    summary = index_folder(store, folder, embedder)
    assert (summary.renamed, summary.removed, summary.added, embedder.passages) == (1, 0, 0, [])
    assert chunk_ids(store, str(Path("archive") / "old boiler.md")) == ids
    assert set(ids) <= vector_ids(store, embedder)
    (hit,) = search_notes(store, embedder, "boiler warranty installer", k=1)
    assert hit.path == folder / "archive" / "old boiler.md"


def test_a_file_moved_over_another_takes_its_place(store, folder, embedder):
    index_folder(store, folder, embedder)
    ids = chunk_ids(store, "coffee.md")
    replaced = chunk_ids(store, "trips/japan.md")
    embedder.forget()
    (folder / "coffee.md").replace(folder / "trips" / "japan.md")
    summary = index_folder(store, folder, embedder)
    assert (summary.renamed, summary.removed, embedder.passages) == (1, 0, [])
    assert chunk_ids(store, "trips/japan.md") == ids
    assert not set(replaced) & vector_ids(store, embedder)


def test_a_deleted_file_is_removed_with_its_chunks_and_vectors(store, folder, embedder):
    index_folder(store, folder, embedder)
    gone = chunk_ids(store, "trips/japan.md")
    embedder.forget()
    (folder / "trips" / "japan.md").unlink()
    summary = index_folder(store, folder, embedder)
    assert (summary.removed, summary.unchanged, embedder.passages) == (1, 3, [])
    assert "trips/japan.md" not in repository.files_in_folder(store, 1)
    assert not set(gone) & vector_ids(store, embedder)
    state(store)  # the keyword index is in step


def test_every_file_that_is_not_indexed_is_reported_with_its_reason(store, folder, embedder, tmp_path):
    (folder / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(100))
    (folder / "not really.txt").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(100))
    (folder / "empty.md").write_bytes(b"")
    (folder / "big.md").write_text("# Big\n\n" + "words " * 2000, encoding="utf-8")
    (folder / "gone.md").symlink_to(tmp_path / "nowhere.md")
    (folder / "loop.md").symlink_to(folder / "loop.md")
    (folder / "house" / "up").symlink_to(folder)  # a folder link back up: entered once
    (folder / ".obsidian").mkdir()
    (folder / ".obsidian" / "workspace.md").write_text("# hidden", encoding="utf-8")
    (folder / "~$Report.docx").write_bytes(b"lock")
    summary = index_folder(store, folder, embedder, max_bytes=5_000)
    reasons = dict(summary.skipped)
    assert set(reasons) == {"photo.png", "not really.txt", "empty.md", "big.md", "gone.md", "loop.md"}
    assert "unknown file type .png" in reasons["photo.png"]
    assert "PNG" in reasons["not really.txt"]
    assert "empty" in reasons["empty.md"]
    assert "too large" in reasons["big.md"]
    assert "link" in reasons["gone.md"] and "link" in reasons["loop.md"]
    assert summary.added == 4 and "6 skipped:" in summary.describe()
    # Nothing of a skipped file is in the index, and a rescan says the same without reading them again.
    assert {name for name, _ in summary.skipped}.isdisjoint(
        {row[0] for row in store.execute("SELECT f.relative_path FROM note_chunks c JOIN note_files f ON f.id = c.file_id")})
    again = index_folder(store, folder, embedder, max_bytes=5_000)
    assert again.skipped == summary.skipped and again.unchanged == summary.found


def test_what_a_loader_left_out_of_a_file_is_said_and_kept(store, folder, embedder):
    (folder / "export.jsonl").write_text('{"title": "Milk-V", "text": "Meles board, $99"}\n{broken\n', encoding="utf-8")
    summary = index_folder(store, folder, embedder)
    assert summary.added == 5 and summary.problems == [("export.jsonl", "line 2: not JSON")]
    assert "; 1 file indexed without what could not be read: export.jsonl (line 2: not JSON)." in summary.describe()
    assert index_folder(store, folder, embedder).problems == summary.problems  # kept, not read again
    (folder / "export.jsonl").write_text('{"title": "Milk-V", "text": "Meles board, $139"}\n', encoding="utf-8")
    assert index_folder(store, folder, embedder).problems == []


def test_a_loader_failure_costs_one_file_not_the_folder(store, folder, embedder):
    from gallery_app.core.notes.loaders import load_file

    def load(path, **kwargs):
        if path.name == "coffee.md":
            raise RuntimeError("boom")
        return load_file(path, **kwargs)

    summary = index_folder(store, folder, embedder, load=load)
    assert summary.added == 3 and dict(summary.skipped) == {"coffee.md": "could not be read (RuntimeError: boom)"}


def test_a_file_that_turns_unreadable_loses_its_chunks(store, folder, embedder):
    index_folder(store, folder, embedder)
    gone = chunk_ids(store, "coffee.md")
    (folder / "coffee.md").write_bytes(b"\x00\x01\x02" * 50)
    summary = index_folder(store, folder, embedder)
    assert summary.changed == 1 and "binary" in dict(summary.skipped)["coffee.md"]
    assert chunk_ids(store, "coffee.md") == [] and not set(gone) & vector_ids(store, embedder)


def test_a_file_name_that_is_not_utf8_is_indexed_and_found_unchanged_again(store, folder, embedder):
    name = os.fsdecode(b"caf\xe9.md")
    (folder / name).write_text("# Cafe\n\nThe espresso place on the corner.\n", encoding="utf-8")
    assert index_folder(store, folder, embedder).added == 5
    again = index_folder(store, folder, embedder)
    assert (again.unchanged, again.added) == (5, 0)


def test_a_stopped_run_keeps_its_finished_files_and_the_next_run_does_the_rest(store, folder, embedder, tmp_path):
    indexed = []
    summary = index_folder(store, folder, embedder, batch_size=1,
                           progress=lambda stage, done, total: indexed.append(done) if stage == "indexing" else None,
                           cancel=lambda: len(indexed) >= 2)
    assert summary.cancelled and summary.describe().startswith("Stopped early")
    assert store.execute("SELECT count(*) FROM note_files").fetchone()[0] == 2
    assert repository.folder_by_id(store, 1).scanned_at is None
    index_folder(store, folder, embedder)
    fresh = open_store(tmp_path / "fresh.db")
    index_folder(fresh, folder, WordHashEmbedder(max_tokens=512, passage_prefix="passage: "))
    assert state(store) == state(fresh)


KILLED = textwrap.dedent(
    """
    import sys, time
    from gallery_app.core.notes.indexer import index_folder
    from gallery_app.core.store import open_store
    from tests.text_embedders import WordHashEmbedder

    class Slow(WordHashEmbedder):
        def embed_passages(self, texts):
            time.sleep(0.02)
            return super().embed_passages(texts)

    def progress(stage, done, total):
        if stage == "indexing":
            print("indexed", done, flush=True)

    index_folder(open_store(sys.argv[1]), sys.argv[2], Slow(max_tokens=512, passage_prefix="passage: "),
                 progress=progress, batch_size=2)
    print("finished", flush=True)
    """
)


@pytest.mark.slow
def test_killed_mid_index_a_rerun_ends_with_what_an_uninterrupted_run_has(tmp_path, folder, embedder):
    for number in range(40):
        paragraphs = "\n\n".join(f"Paragraph {p} of note {number}: " + " ".join(f"w{number}x{p}x{i}" for i in range(40))
                                 for p in range(4))
        (folder / "many" / f"note {number:02}.md").parent.mkdir(exist_ok=True)
        (folder / "many" / f"note {number:02}.md").write_text(f"# Note {number}\n\n{paragraphs}\n", encoding="utf-8")
    killed_db = tmp_path / "killed.db"
    child = subprocess.Popen([sys.executable, "-c", KILLED, str(killed_db), str(folder)], stdout=subprocess.PIPE,
                             text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"})
    try:
        for line in child.stdout:
            if line.strip() == "indexed 10":
                break
        else:
            pytest.fail("the child finished or died before it had indexed 10 files")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL

    conn = open_store(killed_db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    partial = conn.execute("SELECT count(*) FROM note_files").fetchone()[0]
    assert 10 <= partial < 44
    summary = index_folder(conn, folder, embedder)
    assert summary.unchanged >= 10 and summary.added + summary.unchanged == 44
    fresh = open_store(tmp_path / "fresh.db")
    index_folder(fresh, folder, WordHashEmbedder(max_tokens=512, passage_prefix="passage: "))
    assert state(conn) == state(fresh)


def test_removing_a_folder_removes_its_rows_and_every_models_vectors(store, folder, embedder, tmp_path):
    index_folder(store, folder, embedder)
    other = tmp_path / "Other"
    other.mkdir()
    (other / "keep.md").write_text("# Keep\n\nThis one stays.\n", encoding="utf-8")
    index_folder(store, other, embedder)
    second = WordHashEmbedder("test-word-hash-2", max_tokens=512)
    index_folder(store, folder, second)  # unchanged files, embedded by a second model too
    folder_id = repository.folder_by_path(store, folder).id
    repository.remove_folder(store, folder_id)
    kept = repository.folder_by_path(store, other)
    assert [f.path for f in repository.list_folders(store)] == [other]
    assert list(repository.files_in_folder(store, kept.id)) == ["keep.md"]
    assert vector_ids(store, embedder) == set(chunk_ids(store, "keep.md"))
    assert vector_ids(store, second) == set()
    state(store)


def test_search_finds_the_note_and_narrows_to_the_folders_asked(store, folder, embedder, tmp_path):
    index_folder(store, folder, embedder)
    assert search_notes(store, WordHashEmbedder("never-used", max_tokens=512), "boiler") == []  # reading makes no table
    hits = search_notes(store, embedder, "When does the boiler warranty end?", k=3)
    assert hits[0].path == folder / "house" / "boiler.md"
    assert hits[0].title == "boiler" and hits[0].heading_path == ("Boiler",) and hits[0].page is None
    assert "March 2027" in hits[0].text and hits[0].score > hits[-1].score
    other = tmp_path / "Other"
    other.mkdir()
    (other / "boiler manual.md").write_text("# Boiler manual\n\nBoiler warranty terms.\n", encoding="utf-8")
    index_folder(store, other, embedder)
    other_id = repository.folder_by_path(store, other).id
    assert {hit.path.parent for hit in search_notes(store, embedder, "boiler warranty", k=10,
                                                    folder_ids=[other_id])} == {other}
    with pytest.raises(AppError, match="empty"):
        search_notes(store, embedder, "  ")
    with pytest.raises(AppError, match="whole number"):
        search_notes(store, embedder, "boiler", k=0)


def test_a_folder_inside_an_indexed_one_or_around_it_is_refused(store, folder, embedder):
    index_folder(store, folder, embedder)
    with pytest.raises(AppError, match="inside the notes folder"):
        index_folder(store, folder / "house", embedder)
    with pytest.raises(AppError, match="indexed twice"):
        index_folder(store, folder.parent, embedder)
    with pytest.raises(AppError, match="does not exist"):
        index_folder(store, folder / "nope", embedder)
    with pytest.raises(AppError, match="not a folder"):
        index_folder(store, folder / "coffee.md", embedder)


def test_switching_the_embedder_embeds_the_notes_too(store, folder, embedder):
    index_folder(store, folder, embedder)
    new = WordHashEmbedder("test-word-hash-new", max_tokens=512)
    assert repository.missing_chunk_vectors(store, new) == store.execute("SELECT count(*) FROM note_chunks").fetchone()[0]
    switch_embedder(store, new, "test-word-hash-new")
    assert repository.missing_chunk_vectors(store, new) == 0
    assert choices.chosen(Role.TEXT_EMBEDDER) == "test-word-hash-new"
    assert search_notes(store, new, "boiler warranty", k=1)[0].title == "boiler"


def test_a_rescan_with_another_embedder_embeds_what_it_lacks(store, folder, embedder):
    index_folder(store, folder, embedder)
    new = WordHashEmbedder("test-word-hash-new", max_tokens=512)
    summary = index_folder(store, folder, new)
    assert summary.unchanged == 4 and summary.embedded == len(new.passages) == summary.chunks


def test_skipped_loader_reason_is_the_loaders_own_words(store, folder, embedder):
    def load(path, **kwargs):
        raise NoteSkipped("password-protected PDF")

    summary = index_folder(store, folder, embedder, load=load)
    assert summary.skip_reasons() == {"password-protected PDF": 4}
    assert summary.describe().endswith("; 4 skipped: 4 password-protected PDF.")
    assert summary.describe().startswith("no notes in")


@pytest.mark.shared_fixtures
def test_real_notes_from_the_fixtures_are_indexed_and_found(store, shared_fixtures, tmp_path, embedder):
    source = shared_fixtures / "notes_qa" / "folder"
    copy = tmp_path / "vault"
    for relative in ("cheatsheets/tar.txt", "kepano-obsidian/References/Out of Control.md",
                     "Vault of Knowledge/01. Personal/Creative and Recreational/Books.md"):
        (copy / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / relative, copy / relative)
    summary = index_folder(store, copy, embedder)
    assert (summary.added, summary.skipped) == (3, [])
    assert summary.describe().startswith(f"3 notes in {copy}")
    (hit,) = search_notes(store, embedder, "Out of Control pages", k=1)
    assert hit.path.name == "Out of Control.md" and "528" in hit.chunk.context + hit.text
