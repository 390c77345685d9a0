"""Asking with the word-hash test embedder and a scripted LLM: matches first, then the answer's pieces, then the answer.

The fast twin of tests/e2e/test_chat_answers.py (real MiniLM and SmolLM2 there). The LLM is
tests.chat_helpers.ScriptedLLM, which "writes" the pieces it is given whatever the prompt, so the
grounding check's verdict is known. Citations and chat-log declines are in test_answer_evidence.py.
"""

from __future__ import annotations

import pytest

from gallery_app.core.chat.ask_options import AskOptions
from gallery_app.core.chat.session import NOTHING_FOUND, UNSUPPORTED, ChatSession, FollowUps
from gallery_app.core.chat.events import Answer as AnswerEvent, MatchesFound as MatchesEvent
from gallery_app.core.store import open_store
from tests.chat_helpers import ScriptedLLM
from tests.small_chats import open_small_library
from tests.text_embedders import WordHashEmbedder

EMBEDDER = WordHashEmbedder()
TRIP_FERRY, COMMUTE = "leaves Penzance at 9:15", "Missed the ferry to work"


def piece_text(event) -> str:
    return event if isinstance(event, str) else event.text


def split(events: list) -> tuple[object, list[str], object]:
    """(the matches event, the answer's pieces, the answer event) of one ask(), checking their order."""
    assert len(events) >= 2, events
    first, *pieces, last = events
    assert isinstance(first, MatchesEvent), first
    assert isinstance(last, AnswerEvent), last
    assert not any(isinstance(e, (MatchesEvent, AnswerEvent)) for e in pieces), pieces
    return first, [piece_text(e) for e in pieces], last


def rank_of(retrieval, words: str) -> int | None:
    return next((rank for rank, m in enumerate(retrieval.matches, 1) if words in m.text), None)


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """Both small chats imported once: (conn, trip's chat id, Jonas's chat id)."""
    conn, trip, flat = open_small_library(tmp_path_factory.mktemp("library"), EMBEDDER)
    yield conn, trip, flat
    conn.close()


def test_the_matches_come_before_the_model_writes_then_its_pieces_then_the_answer(library):
    conn, trip, _flat = library
    llm = ScriptedLLM(["Daniel", " is bringing", " it [1]."])
    session = ChatSession(conn, EMBEDDER, llm, AskOptions(passages=3))
    events = session.ask("Who is bringing the inflatable kayak?")

    first = next(events)
    assert isinstance(first, MatchesEvent)
    assert llm.prompts == []  # the passages can be shown before the model is asked anything
    assert first.question == first.search_query == "Who is bringing the inflatable kayak?"
    assert "Daniel: I'll bring the inflatable kayak" in first.retrieval.matches[0].text

    matches, pieces, answer = split([first, *events])
    assert pieces == ["Daniel", " is bringing", " it [1]."]  # streamed as written
    assert answer.text == "Daniel is bringing it [1]." == "".join(pieces) and answer.knows and not answer.declined
    assert answer.retrieval is matches.retrieval and answer.prompt.matches[0] == matches.retrieval.matches[0]
    assert answer.citations == [1] and "inflatable kayak" in answer.cited_matches[0].text
    assert "Daniel: I'll bring the inflatable kayak" in answer.prompt.context  # what the model read
    assert len(llm.prompts) == 1
    assert session.conversation.turns[-1].answer == "Daniel is bringing it."  # remembered without its marker


def test_an_unanswerable_question_is_declined_with_the_closest_message(library):
    conn, _trip, _flat = library
    llm = ScriptedLLM(["Her surname", " is Pengelly."])  # a name in no passage: made up
    session = ChatSession(conn, EMBEDDER, llm, AskOptions(passages=3))
    _matches, _pieces, answer = split(list(session.ask("What is Maya's surname?")))
    assert answer.declined and not answer.knows
    assert answer.text.startswith(UNSUPPORTED + "\nClosest message: ")
    assert answer.raw_text == "Her surname is Pengelly." and "Pengelly" in answer.grounding.unsupported
    assert session.conversation.turns[-1].answer == UNSUPPORTED  # the next prompt replays the decline


@pytest.mark.parametrize("empty", [True, False])
def test_when_nothing_is_found_the_model_is_not_asked(library, tmp_path, empty):
    if empty:
        conn, options = open_store(tmp_path / "empty.db"), AskOptions()  # no chats imported yet
    else:
        conn, options = library[0], AskOptions(min_score=1.01)  # nothing similar enough
    llm = ScriptedLLM(["Daniel."])
    session = ChatSession(conn, EMBEDDER, llm, options)
    matches, pieces, answer = split(list(session.ask("Who is bringing the inflatable kayak?")))
    assert matches.retrieval.matches == [] and matches.retrieval.describe() == "No passages found."
    assert pieces == [NOTHING_FOUND] and answer.text == NOTHING_FOUND
    assert not answer.knows and answer.prompt is None and llm.prompts == []
    assert session.conversation.turns[-1].answer == NOTHING_FOUND


def test_without_a_model_ask_gives_the_matches_and_an_empty_answer(library):
    conn, _trip, _flat = library
    session = ChatSession(conn, EMBEDDER, None, AskOptions(passages=2))
    matches, pieces, answer = split(list(session.ask("Who is bringing the inflatable kayak?")))
    assert len(matches.retrieval.matches) == 2 and pieces == []
    assert answer.text == "" and not answer.knows and answer.prompt is None
    assert session.answer("And the pump?").retrieval.matches  # answer() is ask()'s last event


def test_a_session_over_one_chat_answers_from_that_chat_only(library):
    conn, _trip, flat = library
    session = ChatSession(conn, EMBEDDER, ScriptedLLM(["It was cancelled [1]."]), chats=[flat])
    matches, _pieces, answer = split(list(session.ask("What happened to the ferry?")))
    assert matches.retrieval.matches and {m.chat_id for m in matches.retrieval.matches} == {flat}
    assert "The ferry was cancelled" in matches.retrieval.matches[0].text
    assert "Penzance" not in answer.prompt.context and answer.knows


def test_a_follow_up_is_searched_with_the_previous_question_and_near_its_answer(library):
    conn, _trip, _flat = library
    llm = ScriptedLLM(["Priya", " booked it [1]."])
    session = ChatSession(conn, EMBEDDER, llm)  # follow-ups as the app asks them by default
    _m, _p, first = split(list(session.ask("Who booked the cottage and paid the deposit?")))
    assert first.knows and "Priya: I booked the lighthouse cottage" in first.retrieval.matches[0].text

    llm.pieces = ["At 9:15", " from Penzance [1]."]
    matches, _pieces, answer = split(list(session.ask("And the ferry?")))
    assert matches.question == "And the ferry?"
    assert matches.search_query == "Who booked the cottage and paid the deposit? And the ferry?"
    # The islands' ferry, three hours after the booking, comes before Maya's commute a fortnight later.
    assert rank_of(matches.retrieval, TRIP_FERRY) < rank_of(matches.retrieval, COMMUTE)
    assert answer.knows and "9:15" in answer.prompt.context
    # The earlier turn is replayed to the model, as it was answered.
    assert "Who booked the cottage and paid the deposit?" in answer.prompt.text
    assert "Priya booked it." in answer.prompt.text

    # Alone (a new conversation, or follow-ups off) "the ferry" is the one most like the words.
    session.new_conversation()
    alone, _pieces, _answer = split(list(session.ask("And the ferry?")))
    assert alone.search_query == "And the ferry?"
    assert rank_of(alone.retrieval, COMMUTE) < rank_of(alone.retrieval, TRIP_FERRY)
    plain = ChatSession(conn, EMBEDDER, ScriptedLLM(["Priya [1]."]), AskOptions(follow_ups=FollowUps.NONE))
    plain.answer("Who booked the cottage and paid the deposit?")
    unrelated, _pieces, _answer = split(list(plain.ask("And the ferry?")))
    assert unrelated.search_query == "And the ferry?"
    assert rank_of(unrelated.retrieval, COMMUTE) < rank_of(unrelated.retrieval, TRIP_FERRY)
