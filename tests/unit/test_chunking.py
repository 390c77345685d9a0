"""Passages keep who said what, never span two days, and fit the embedder's token budget."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from gallery_app.core.chat.chunking import ChunkInput, ChunkingConfig, chunk_messages


def count_words(text: str) -> int:
    """A stand-in tokenizer: two special tokens plus one token per word."""
    return 2 + len(text.split())


def messages(n: int, *, start=datetime(2024, 5, 1, 9, 0), step=timedelta(minutes=5), text="hello there"):
    return [ChunkInput(i + 1, start + i * step, ["Ana", "Ben"][i % 2], f"{text} {i}") for i in range(n)]


def test_every_line_starts_with_its_sender():
    items = [ChunkInput(1, datetime(2024, 5, 1, 9), "Ana", "first line\nsecond line\n\nthird"),
             ChunkInput(2, datetime(2024, 5, 1, 9, 1), "Ben", "ok")]
    (chunk,) = chunk_messages(items, count_words, max_tokens=100)
    assert chunk.text.split("\n") == ["Ana: first line", "Ana: second line", "Ana: third", "Ben: ok"]
    assert chunk.message_ids == [1, 2] and chunk.senders == ["Ana", "Ben"]


def test_a_new_passage_starts_when_the_day_changes():
    items = messages(6, start=datetime(2024, 5, 1, 22, 0), step=timedelta(minutes=30))
    chunks = chunk_messages(items, count_words, max_tokens=500)
    assert [c.day.isoformat() for c in chunks] == ["2024-05-01", "2024-05-02"]
    assert [c.message_ids for c in chunks] == [[1, 2, 3, 4], [5, 6]]
    assert all(c.first_timestamp.date() == c.last_timestamp.date() == c.day for c in chunks)


def test_passages_stay_within_the_token_budget():
    chunks = chunk_messages(messages(100), count_words, max_tokens=512, config=ChunkingConfig(max_tokens=40))
    assert len(chunks) > 5
    assert all(c.tokens <= 40 for c in chunks)
    assert sorted(i for c in chunks for i in c.message_ids) == list(range(1, 101))


def test_a_long_message_is_split_at_sentences_and_every_part_keeps_the_sender():
    sentences = " ".join(f"Sentence number {i} is here." for i in range(40))
    (long_message,) = [ChunkInput(1, datetime(2024, 5, 1, 9), "Chloé", sentences)]
    chunks = chunk_messages([long_message], count_words, max_tokens=30)
    lines = [line for c in chunks for line in c.text.split("\n")]
    assert len(chunks) > 3 and all(c.tokens <= 30 for c in chunks)
    assert all(line.startswith("Chloé: ") for line in lines)
    assert all(line.endswith(".") for line in lines)  # cut between sentences, not inside one
    assert " ".join(line.removeprefix("Chloé: ") for line in lines) == sentences
    assert all(c.message_ids == [1] for c in chunks)


def test_a_sentence_longer_than_the_budget_is_split_between_words():
    words = " ".join(f"w{i}" for i in range(200))
    chunks = chunk_messages([ChunkInput(1, datetime(2024, 5, 1), "Ana", words)], count_words, max_tokens=25)
    assert all(c.tokens <= 25 for c in chunks)
    assert " ".join(l.removeprefix("Ana: ") for c in chunks for l in c.text.split("\n")) == words


def test_the_date_can_lead_the_passage():
    (chunk,) = chunk_messages(messages(2), count_words, max_tokens=100, config=ChunkingConfig(include_date=True))
    assert chunk.text.split("\n")[0] == "2024-05-01"


def test_a_long_pause_can_start_a_new_passage():
    items = messages(4, step=timedelta(hours=3))
    assert len(chunk_messages(items, count_words, max_tokens=500)) == 1
    assert len(chunk_messages(items, count_words, max_tokens=500, config=ChunkingConfig(max_gap_minutes=60))) == 4


def test_underestimated_tokens_are_caught_by_the_exact_count():
    # Joined passages cost more than their lines suggest: the exact count still keeps them in budget.
    def lumpy(text: str) -> int:
        return count_words(text) + 3 * text.count("\n")

    chunks = chunk_messages(messages(60), lumpy, max_tokens=30)
    assert all(c.tokens <= 30 for c in chunks)
    assert sorted(i for c in chunks for i in c.message_ids) == list(range(1, 61))


def test_a_budget_with_no_room_is_refused():
    with pytest.raises(ValueError, match="no room"):
        chunk_messages(messages(2), count_words, max_tokens=10)
