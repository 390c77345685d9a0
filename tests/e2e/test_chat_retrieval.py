"""Retrieval on the demo chat: answers found, follow-ups handled, other languages reached."""

from __future__ import annotations

import pytest

from gallery_app.core.chat.importer import import_chat
from gallery_app.core.chat.retrieval import ChatRetriever
from gallery_app.core.chat.ask_options import AskOptions, FollowUps
from gallery_app.core.chat.session import ChatSession
from gallery_app.core.store import open_store
from tests.chat_helpers import DEMO_CHAT, demo_questions, message_id_at_line

pytestmark = pytest.mark.e2e

QUESTIONS = demo_questions()


def rank_of(retrieval, message_id: int) -> int | None:
    for rank, match in enumerate(retrieval.matches, start=1):
        if message_id in match.message_ids:
            return rank
    return None


def test_matches_carry_what_the_person_is_shown(demo_store, minilm):
    result = ChatRetriever(demo_store, minilm).retrieve("What was the key safe code at the cottage?", k=4)
    assert result.describe() == "Found 4 passages in 1 chat"
    best = result.matches[0]
    assert "4418" in best.text and "4418" in best.excerpt
    assert best.chat_title == "Weekend away" and best.day == "2024-06-12"
    assert set(best.focus_message_ids) <= set(best.message_ids) and best.senders
    assert 0 < best.similarity <= 1
    assert [m.similarity for m in result.matches] == sorted((m.similarity for m in result.matches), reverse=True)


def test_min_score_and_chat_filter(demo_store, minilm):
    retriever = ChatRetriever(demo_store, minilm)
    assert retriever.retrieve("key safe code", k=4, min_score=0.99).matches == []
    assert retriever.retrieve("key safe code", k=4, chats=[999]).matches == []
    assert retriever.retrieve("key safe code", k=2, chats=[1]).passage_count == 2


@pytest.mark.parametrize("mode", [FollowUps.PREVIOUS, FollowUps.NEIGHBOURHOOD])
def test_follow_up_finds_the_cottage_price_with_follow_up_handling(demo_store, minilm, mode):
    follow_up = QUESTIONS["How much was it?"]
    assert follow_up["previous_question"] == "Who ended up paying for the hotel?"
    price = message_id_at_line(demo_store, follow_up["gold_lines"][0])
    session = ChatSession(demo_store, minilm, None, AskOptions(passages=3, follow_ups=mode))
    _query, previous = session.retrieve(follow_up["previous_question"])
    session.remember(follow_up["previous_question"], previous, "Daniel put the room on his card.")
    _query, retrieval = session.retrieve(follow_up["question"])
    assert rank_of(retrieval, price) is not None


def test_english_question_finds_a_spanish_message_with_e5_but_not_with_minilm(tmp_path, minilm, e5):
    question = "Which restaurant was booked for the grandmother's birthday?"
    answer_line = 225  # "Mi madre reservó una mesa en Casa Rufino, un restaurante en El Palmar, …"
    ranks = {}
    for embedder in (minilm, e5):
        conn = open_store(tmp_path / f"{embedder.model_key}.db")
        import_chat(conn, DEMO_CHAT, embedder)
        retrieval = ChatRetriever(conn, embedder).retrieve(question, k=3)
        hits = [rank for rank, m in enumerate(retrieval.matches, 1)
                if message_id_at_line(conn, answer_line) in m.focus_message_ids]
        ranks[embedder.model_key] = hits[0] if hits else None
    assert ranks[e5.model_key] is not None, ranks
    assert ranks[minilm.model_key] is None, ranks
