"""What asking yields is typed: events told apart by type and a Status by its kind, a ChatModel the session
can rely on, and a conversation handed in rather than assigned.

Before: ``ask`` yielded plain strings among its events, and the window told a model load from the other
notes by the wording "Loading…".
"""

from __future__ import annotations

import inspect

import pytest

from gallery_app.core.chat.ask_options import AskOptions
from gallery_app.core.chat.chat_model import ChatModel
from gallery_app.core.chat.events import Answer, AnswerPiece, MatchesFound, Status, StatusKind
from gallery_app.core.chat.importer import import_chat
from gallery_app.core.chat.prompting import Conversation
from gallery_app.core.chat.session import ChatSession
from gallery_app.core.errors import Cancelled
from gallery_app.core.models.runtimes.llama import ChatLLM
from gallery_app.core.store import open_store
from tests.chat_helpers import DEMO_CHAT, HashEmbedder, ScriptedLLM

QUESTION = "Who ended up paying for the hotel?"


class UnloadedLLM(ScriptedLLM):
    """A stand-in whose weights are read on first use, as ChatLLM's are."""

    loaded = False

    def count_tokens(self, text: str) -> int:
        self.loaded = True
        return super().count_tokens(text)


@pytest.fixture(scope="module")
def demo_conn(tmp_path_factory):
    conn = open_store(tmp_path_factory.mktemp("events") / "gallery.db")
    import_chat(conn, DEMO_CHAT, HashEmbedder())
    yield conn
    conn.close()


def protocol_members(protocol) -> set[str]:
    return {name for name in vars(protocol) if not name.startswith("_")} | set(protocol.__annotations__)


def test_the_llama_wrapper_and_the_test_double_are_chat_models():
    assert isinstance(ScriptedLLM([]), ChatModel)
    members = protocol_members(ChatModel)
    assert {"n_ctx", "loaded", "chat_template", "tokenize", "stream_completion"} <= members
    source = inspect.getsource(ChatLLM.__init__)
    for name in members:
        # Without loading a model: properties and methods on the class, n_ctx set when it is made.
        assert hasattr(ChatLLM, name) or f"self.{name} =" in source, name
    wanted = inspect.signature(ChatModel.stream_completion).parameters
    given = inspect.signature(ChatLLM.stream_completion).parameters
    assert {name for name, p in wanted.items() if p.kind is p.KEYWORD_ONLY} <= set(given)


def test_ask_yields_typed_events_only(demo_conn):
    events = list(ChatSession(demo_conn, HashEmbedder(), ScriptedLLM(["Daniel", " paid [1]."])).ask(QUESTION))
    assert isinstance(events[0], MatchesFound) and isinstance(events[-1], Answer)
    assert all(isinstance(event, AnswerPiece) for event in events[1:-1]) and len(events) > 3
    assert "".join(event.text for event in events[1:-1]) == "Daniel paid [1]."


def test_a_model_read_on_first_use_is_announced_by_kind_after_the_passages(demo_conn):
    llm = UnloadedLLM(["Daniel paid [1]."])
    events = list(ChatSession(demo_conn, HashEmbedder(), llm).ask(QUESTION))
    kinds = [type(event).__name__ for event in events]
    assert kinds[:2] == ["MatchesFound", "Status"] and events[1].kind is StatusKind.LOADING_LLM
    assert events[1].kind.loads_a_model and llm.loaded
    assert [type(event) for event in ChatSession(demo_conn, HashEmbedder(), llm).ask(QUESTION)].count(Status) == 0


def test_a_stop_while_the_model_loads_ends_the_question(demo_conn):
    asking = ChatSession(demo_conn, HashEmbedder(), UnloadedLLM(["Daniel paid."])).ask(QUESTION, cancel=lambda: True)
    assert isinstance(next(asking), MatchesFound) and isinstance(next(asking), Status)
    with pytest.raises(Cancelled):
        next(asking)


def test_status_wording_comes_from_its_kind():
    assert Status(StatusKind.READING_FILE, "_chat.txt").text == "Reading _chat.txt…"
    assert Status(StatusKind.LOADING_EMBEDDER).kind.loads_a_model
    assert not Status(StatusKind.SEARCHING).kind.loads_a_model


def test_a_conversation_handed_in_gets_the_turns(demo_conn):
    conversation = Conversation()
    first = ChatSession(demo_conn, HashEmbedder(), ScriptedLLM(["Daniel paid [1]."]), conversation=conversation)
    first.answer(QUESTION)
    follow_up = ChatSession(demo_conn, HashEmbedder(), None, AskOptions(passages=2), conversation=conversation)
    assert len(conversation.turns) == 1 and follow_up.search_query("How much?") == f"{QUESTION} How much?"
