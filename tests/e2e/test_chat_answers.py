"""Grounded, streamed answers from the real offline LLMs on the demo chat."""

from __future__ import annotations

import pytest

from gallery_app.core.chat.events import Answer, AnswerPiece, MatchesFound
from gallery_app.core.chat.session import ChatSession
from gallery_app.core.models import catalog, sources
from gallery_app.core.models.loading import open_chat_llm

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def smollm():
    llm = open_chat_llm(catalog.SMOLLM2_135M.key, threads=2)
    yield llm
    llm.release()


def test_who_paid_for_the_hotel_names_the_payer(demo_store, minilm, smollm):
    session = ChatSession(demo_store, minilm, smollm)
    events = list(session.ask("Who ended up paying for the hotel?"))
    assert isinstance(events[0], MatchesFound) and events[0].retrieval.matches  # passages come first
    pieces = [e for e in events if isinstance(e, AnswerPiece)]
    answer = events[-1]
    assert isinstance(answer, Answer) and len(pieces) > 1  # streamed, not delivered at once
    assert "daniel" in answer.text.lower(), answer
    assert "maya" not in answer.text.lower()
    assert answer.prompt.text.count("Question: Who ended up paying for the hotel?") == 1
    assert len(answer.prompt.tokens) + answer.prompt.answer_tokens <= smollm.n_ctx


def test_an_unanswerable_question_gets_dont_know(demo_store, minilm, smollm):
    answer = ChatSession(demo_store, minilm, smollm).answer("What is Maya's surname?")
    assert "don't know" in answer.text.lower(), answer
    assert not answer.knows


def test_follow_up_uses_the_conversation(demo_store, minilm, smollm):
    session = ChatSession(demo_store, minilm, smollm)
    session.answer("Who ended up paying for the hotel?")
    follow_up = session.answer("How much was it?")
    assert follow_up.search_query.startswith("Who ended up paying for the hotel?")
    assert "340" in follow_up.prompt.text  # the cottage price reached the model
    assert "Who ended up paying for the hotel?" in follow_up.prompt.text  # the earlier turn is replayed


def test_stop_between_tokens(demo_store, minilm, smollm):
    from gallery_app.core.errors import Cancelled

    # Whatever the model writes (an answer, or an "I don't know" that is held back and never streamed), a
    # stop asked for while it writes ends the turn at the next token: nothing more is shown, no answer follows.
    checks, seen, stopped_at, events = [], [], [], []

    def cancel() -> bool:
        checks.append(len(seen))
        if len(checks) >= 3 and not stopped_at:  # the model has written at least two tokens
            stopped_at.append(len(seen))
        return bool(stopped_at)

    with pytest.raises(Cancelled):
        for event in ChatSession(demo_store, minilm, smollm).ask("Where did they stay in June?", cancel=cancel):
            events.append(event)
            if isinstance(event, AnswerPiece):
                seen.append(event.text)
    assert stopped_at and len(seen) == stopped_at[0] and len(checks) == 3
    assert not any(isinstance(event, Answer) for event in events)


def test_a_base_model_answers_from_a_completion_prompt(demo_store, minilm):
    llm = open_chat_llm(sources.fetch(catalog.GEMMA3_270M_BASE).spec.key, threads=2)
    try:
        assert llm.chat_template is None
        answer = ChatSession(demo_store, minilm, llm).answer("What was the key safe code at the cottage?")
        assert answer.prompt.text.rstrip().endswith("Q: What was the key safe code at the cottage?\nA:")
        assert answer.text
    finally:
        llm.release()
