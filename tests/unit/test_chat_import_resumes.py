"""A chat import in resumable steps: what finished is kept, a re-run embeds only what is missing."""

from __future__ import annotations

import pytest

from gallery_app.core.chat.importer import EMBED_BATCH, import_chat, reindex
from gallery_app.core.chat.repository import missing_window_vectors
from gallery_app.core.chat.retrieval import ChatRetriever
from gallery_app.core.errors import Cancelled
from gallery_app.core.store import open_store
from tests.chat_helpers import DEMO_CHAT, HashEmbedder

VECTORS = "vec_windows_test_hash_words"
#: Windows of the demo chat cut with HashEmbedder's token counts.
WINDOWS = 121


class BreaksAfter(HashEmbedder):
    """Embeds ``batches`` batches, then fails as a crashed model (or a killed process) would."""

    def __init__(self, batches: int):
        self.left = batches

    def embed_passages(self, texts):
        if self.left == 0:
            raise RuntimeError("the model crashed")
        self.left -= 1
        return super().embed_passages(texts)


def contents(conn) -> dict[str, object]:
    """Everything a search reads, by content (ids may differ between two stores)."""
    vectors = dict(conn.execute(f"SELECT w.text, v.embedding FROM chunk_windows w JOIN {VECTORS} v ON v.rowid = w.id"))
    return {
        "messages": conn.execute("SELECT count(*) FROM messages").fetchone()[0],
        "passages": sorted(row[0] for row in conn.execute("SELECT text FROM chunks")),
        "windows": conn.execute("SELECT count(*) FROM chunk_windows").fetchone()[0],
        "vectors": conn.execute(f"SELECT count(*) FROM {VECTORS}").fetchone()[0],
        "vector of each window": vectors,
        "fts": conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'cottage'").fetchone()[0],
    }


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    conn = open_store(tmp_path_factory.mktemp("whole") / "gallery.db")
    summary = import_chat(conn, DEMO_CHAT, HashEmbedder())
    yield summary, contents(conn)
    conn.close()


def test_a_crash_while_embedding_keeps_the_finished_batches_and_a_rerun_completes(store, uninterrupted):
    """Before: all or nothing in one transaction after hours of embedding; a crash kept nothing."""
    whole, expected = uninterrupted
    with pytest.raises(RuntimeError):
        import_chat(store, DEMO_CHAT, BreaksAfter(2))
    partial = contents(store)
    assert partial["messages"] == 432 and partial["windows"] == expected["windows"] == WINDOWS
    assert partial["vectors"] == 2 * EMBED_BATCH and missing_window_vectors(store, HashEmbedder()) == WINDOWS - 64
    assert store.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    again = import_chat(store, DEMO_CHAT, HashEmbedder())
    assert again.chat_id == 1 and not again.new_chat and again.messages_added == 0
    assert again.windows_added == WINDOWS - 64
    assert again.describe().startswith("Finished importing “Weekend away”: all 431 messages were imported before, "
                                       "and its last 57 passages are now searchable.")
    assert contents(store) == expected
    assert whole.windows_added == WINDOWS


def test_cancel_while_embedding_keeps_finished_batches(store):
    done = []

    def progress(stage, finished, total):
        if stage == "embedded":
            done.append(finished)

    with pytest.raises(Cancelled) as cancelled:
        import_chat(store, DEMO_CHAT, HashEmbedder(), progress=progress, cancel=lambda: bool(done))
    assert str(cancelled.value) == ("The import was cancelled: the messages are saved, 64 of 121 passages were "
                                    "embedded and are kept. Import the same file again to finish.")
    assert store.execute(f"SELECT count(*) FROM {VECTORS}").fetchone()[0] == 64
    assert reindex(store, HashEmbedder()) == WINDOWS - 64 and missing_window_vectors(store, HashEmbedder()) == 0


def test_search_works_on_a_partly_embedded_chat(store):
    with pytest.raises(RuntimeError):
        import_chat(store, DEMO_CHAT, BreaksAfter(1))
    retriever = ChatRetriever(store, HashEmbedder())
    found = retriever.retrieve("key safe code at the cottage", k=4)
    assert found.unindexed == WINDOWS - EMBED_BATCH
    assert len(found.matches) == 4
    embedded_passages = {row[0] for row in store.execute(
        f"SELECT DISTINCT chunk_id FROM chunk_windows WHERE id IN (SELECT rowid FROM {VECTORS})")}
    assert {match.chunk_id for match in found.matches} <= embedded_passages


def test_the_estimate_is_told_before_progress_and_kept_in_the_summary(store):
    heard = []
    summary = import_chat(store, DEMO_CHAT, HashEmbedder(), on_estimate=lambda e: heard.append(("estimate", e)),
                          progress=lambda stage, done, total: heard.append((stage, done)))
    estimates = [item for kind, item in heard if kind == "estimate"]
    assert len(estimates) == 1 and summary.estimate == estimates[0]
    assert estimates[0].passages == WINDOWS and estimates[0].seconds >= 0
    assert estimates[0].model_name == "test-hash-words"
    assert estimates[0].describe().startswith("About 121 passages to embed — about 5 s with test-hash-words")
    stages = [kind for kind, _ in heard]
    assert stages.index("estimate") < stages.index("embedded")


class ImportsTheLongerExportMeanwhile(HashEmbedder):
    """While embedding its first batch, another connection imports the whole chat (replacing a day's passages)."""

    def __init__(self, db_path):
        self.db_path = db_path
        self.interfered = False

    def embed_passages(self, texts):
        if not self.interfered:
            self.interfered = True
            import_chat(open_store(self.db_path), DEMO_CHAT, HashEmbedder())
        return super().embed_passages(texts)


def test_windows_replaced_while_being_embedded_get_no_stale_vectors(store, db_path, tmp_path):
    """The shorter export's last day is cut into passages again by the longer one while the first embeds it."""
    lines = DEMO_CHAT.read_bytes().split(b"\r\n")
    shorter = tmp_path / "_chat.txt"
    shorter.write_bytes(b"\r\n".join(lines[:300]))
    embedder = ImportsTheLongerExportMeanwhile(db_path)
    import_chat(store, shorter, embedder)
    assert embedder.interfered
    orphans = store.execute(
        f"SELECT count(*) FROM {VECTORS} v LEFT JOIN chunk_windows w ON w.id = v.rowid WHERE w.id IS NULL").fetchone()[0]
    assert orphans == 0 and missing_window_vectors(store, HashEmbedder()) == 0
    for text, blob in store.execute(f"SELECT w.text, v.embedding FROM chunk_windows w JOIN {VECTORS} v ON v.rowid = w.id"):
        assert blob == HashEmbedder().embed_passages([text])[0].tobytes(), text
