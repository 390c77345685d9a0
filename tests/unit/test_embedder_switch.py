"""Another text embedder for every chat: filled beside the old one, switched to only once complete."""

from __future__ import annotations

import pytest

from gallery_app.core.chat.embedder_switch import switch_embedder
from gallery_app.core.chat.importer import import_chat
from gallery_app.core.chat.repository import missing_window_vectors
from gallery_app.core.chat.retrieval import ChatRetriever
from gallery_app.core.errors import Cancelled
from gallery_app.core.models import choices
from gallery_app.core.models.specs import Role
from gallery_app.core.store import open_store
from tests.chat_helpers import DEMO_CHAT, HashEmbedder

QUESTION = "key safe code at the cottage"


class OtherEmbedder(HashEmbedder):
    """A second embedder with its own space (and table)."""

    model_key = "test-hash-other"
    dims = 32


@pytest.fixture
def library(tmp_path):
    path = tmp_path / "gallery.db"
    conn = open_store(path)
    import_chat(conn, DEMO_CHAT, HashEmbedder())
    choices.choose(Role.TEXT_EMBEDDER, "test-hash-words")
    yield path, conn
    conn.close()


def found(conn, embedder) -> list[int]:
    result = ChatRetriever(conn, embedder).retrieve(QUESTION, k=4)
    assert result.unindexed == 0
    return [match.chunk_id for match in result.matches]


def test_every_window_gets_the_new_embedders_vector_and_then_it_is_the_one_used(library):
    path, conn = library
    windows = conn.execute("SELECT count(*) FROM chunk_windows").fetchone()[0]
    assert switch_embedder(conn, OtherEmbedder(), "test-hash-other") == windows
    assert missing_window_vectors(conn, OtherEmbedder()) == 0
    assert missing_window_vectors(conn, HashEmbedder()) == 0
    assert choices.chosen(Role.TEXT_EMBEDDER) == "test-hash-other"
    assert len(found(conn, OtherEmbedder())) == 4


def test_search_keeps_the_old_embedders_full_results_while_the_new_one_fills(library):
    path, conn = library
    before = found(conn, HashEmbedder())
    searcher = open_store(path)
    seen = []

    def search_meanwhile(stage, done, total):
        # What the window or the CLI would search with now: the embedder still chosen.
        assert choices.chosen(Role.TEXT_EMBEDDER) == "test-hash-words"
        seen.append(found(searcher, HashEmbedder()))

    switch_embedder(conn, OtherEmbedder(), "test-hash-other", progress=search_meanwhile)
    searcher.close()
    assert len(seen) >= 2 and all(result == before for result in seen)


def test_a_cancelled_switch_leaves_the_old_embedder_in_use_and_the_next_run_finishes_it(library):
    path, conn = library
    windows = conn.execute("SELECT count(*) FROM chunk_windows").fetchone()[0]
    progress = []
    with pytest.raises(Cancelled):
        switch_embedder(conn, OtherEmbedder(), "test-hash-other", progress=lambda *p: progress.append(p),
                        cancel=lambda: len(progress) >= 2)
    assert choices.chosen(Role.TEXT_EMBEDDER) == "test-hash-words"
    left = missing_window_vectors(conn, OtherEmbedder())
    assert 0 < left < windows
    assert found(conn, HashEmbedder())  # search as before
    assert switch_embedder(conn, OtherEmbedder(), "test-hash-other") == left  # only what was missing
    assert choices.chosen(Role.TEXT_EMBEDDER) == "test-hash-other"


def test_a_chat_imported_during_the_switch_is_embedded_before_it(library, tmp_path):
    path, conn = library
    importer = open_store(path)
    another = tmp_path / "Weekend away 2019" / "_chat.txt"
    another.parent.mkdir()
    another.write_text(DEMO_CHAT.read_text("utf-8").replace("/24, ", "/19, "), "utf-8")
    imported = []

    def import_meanwhile(stage, done, total):
        if not imported:  # with the embedder still chosen, as the window would
            imported.append(import_chat(importer, another, HashEmbedder()))

    switch_embedder(conn, OtherEmbedder(), "test-hash-other", progress=import_meanwhile)
    importer.close()
    assert imported and imported[0].messages_added == 432
    assert missing_window_vectors(conn, OtherEmbedder()) == 0
    assert choices.chosen(Role.TEXT_EMBEDDER) == "test-hash-other"


def test_a_stopped_switch_says_what_is_left_and_that_search_is_unchanged(library):
    path, conn = library
    with pytest.raises(Cancelled) as stopped:
        switch_embedder(conn, OtherEmbedder(), "test-hash-other", cancel=lambda: True)
    windows = conn.execute("SELECT count(*) FROM chunk_windows").fetchone()[0]
    assert stopped.value.message == (f"The switch to test-hash-other was stopped with {windows:,} passages still to "
                                     "embed; search keeps using the text embedder it had.")
    assert "what was embedded is kept" in stopped.value.hint


def test_searching_with_an_embedder_that_embedded_nothing_yet_creates_no_table(library):
    path, conn = library
    tables = conn.execute("SELECT count(*) FROM vector_tables").fetchone()[0]
    result = ChatRetriever(conn, OtherEmbedder()).retrieve(QUESTION, k=4)
    assert result.matches == [] and result.unindexed == conn.execute("SELECT count(*) FROM chunk_windows").fetchone()[0]
    assert missing_window_vectors(conn, OtherEmbedder()) == result.unindexed
    assert conn.execute("SELECT count(*) FROM vector_tables").fetchone()[0] == tables
