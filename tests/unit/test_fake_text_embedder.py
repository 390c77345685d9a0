"""The test embedder (tests/text_embedders.py) is a TextEmbedder whose vectors and token counts are known."""

from __future__ import annotations

import numpy as np

from gallery_app.core.chat.chunking import TokenCounter
from gallery_app.core.models.runtimes.embedders import TextEmbedder
from gallery_app.core.models.specs import Role
from tests.text_embedders import DIMS, MAX_TOKENS, SPECIAL_TOKENS, WordHashEmbedder, tokens


def test_it_is_a_text_embedder_with_the_interface_the_app_uses():
    embedder = WordHashEmbedder()
    assert isinstance(embedder, TextEmbedder) and embedder.role is Role.TEXT_EMBEDDER
    assert (embedder.model_key, embedder.dims, embedder.max_tokens) == ("test-word-hash", DIMS, MAX_TOKENS)
    assert embedder.spec.name == "test-word-hash (test)"
    other = WordHashEmbedder("test-other", dims=64, max_tokens=32)
    assert (other.model_key, other.dims, other.max_tokens) == ("test-other", 64, 32)


def test_rows_are_l2_normalised_float32_of_the_declared_size():
    embedder = WordHashEmbedder()
    rows = embedder.embed_passages(["Maya: see you at the station", "", "👍", "Daniel: ok"])
    assert rows.dtype == np.float32 and rows.shape == (4, DIMS)
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-6)  # even an empty or emoji-only text
    assert embedder.embed_passages([]).shape == (0, DIMS)
    query = embedder.embed_query("station")
    assert query.dtype == np.float32 and query.shape == (DIMS,)


def test_vectors_are_the_same_in_every_instance_batch_and_run():
    texts = ["Daniel: I'll bring the inflatable kayak", "Maya: Rude. Accurate, but rude"]
    alone = np.stack([WordHashEmbedder().embed_passages([text])[0] for text in texts])
    assert np.array_equal(WordHashEmbedder().embed_passages(texts), alone)
    # Pinned, so a salted hash (Python's hash()) would fail here in a new process, not only in a later test.
    assert np.flatnonzero(WordHashEmbedder().embed_query("kayak")).tolist() == [0, 627, 1657, 1685, 1727, 1966, 1974]


def test_texts_sharing_words_are_similar_and_no_two_texts_are_less_than_unrelated():
    embedder = WordHashEmbedder()
    kayak, pizza, kayaks = embedder.embed_passages([
        "Daniel: I'll bring the inflatable kayak, the pump is in my garage",
        "Daniel: Dinner on Friday at the pizza place by the station?",
        "Priya: two kayaks on the roof"])
    question = embedder.embed_query("Who is bringing the kayak?")
    assert question @ kayak > 0.25 > 0.05 > question @ pizza >= 0
    assert question @ kayak > question @ kayaks > question @ pizza  # parts of words count, less
    # Very common words count little: sharing only "the" and "is" is almost unrelated.
    assert embedder.embed_query("the is the") @ pizza < 0.1


def test_tokens_are_words_and_punctuation_plus_two_special_tokens():
    embedder = WordHashEmbedder()
    assert tokens("Hi, Maya! It's 9:15.") == ["hi", ",", "maya", "!", "it", "'", "s", "9", ":", "15", "."]
    assert embedder.count_tokens("Hi, Maya! It's 9:15.") == 11 + SPECIAL_TOKENS
    assert embedder.count_tokens("") == SPECIAL_TOKENS == TokenCounter(embedder.count_tokens).overhead
    prefixed = WordHashEmbedder(passage_prefix="passage: ")
    assert prefixed.count_tokens("Hi") == 1 + 2 + SPECIAL_TOKENS  # the prefix is counted, as in e5


def test_words_past_max_tokens_are_cut_off_as_a_real_model_truncates():
    embedder = WordHashEmbedder(max_tokens=8)
    six = "one two three four five six"
    assert embedder.count_tokens(six) == 8
    assert np.array_equal(embedder.embed_query(six + " kayak"), embedder.embed_query(six))
    assert not np.array_equal(embedder.embed_query("kayak " + six), embedder.embed_query(six))


def test_it_records_what_it_embedded():
    embedder = WordHashEmbedder()
    embedder.embed_passages(["a b c", "d"])
    embedder.embed_query("what?")
    assert embedder.passages == ["a b c", "d"] and embedder.batches == [2] and embedder.queries == ["what?"]
    assert embedder.longest_passage == 3 + SPECIAL_TOKENS
    embedder.forget()
    assert (embedder.passages, embedder.batches, embedder.queries, embedder.longest_passage) == ([], [], [], 0)


def test_a_query_prefix_goes_into_queries_only():
    prefix = "query: "
    embedder = WordHashEmbedder(query_prefix=prefix)
    assert not np.array_equal(embedder.embed_query("kayak"), embedder.embed_passages(["kayak"])[0])
    assert np.array_equal(embedder.embed_query("kayak"), WordHashEmbedder().embed_query(prefix + "kayak"))
