"""Asking with settings or a question that cannot work names the problem instead of "couldn't find anything".

Before: ``--passages 0`` and an empty question searched anyway and said "I couldn't find anything about
that in your chats"; a context too small for the prompt looped forever in ``PromptBuilder.build``.
"""

from __future__ import annotations

import pytest

from gallery_app.core.chat.ask_options import AskOptions
from gallery_app.core.chat.importer import import_chat
from gallery_app.core.chat.prompting import PromptTooLong
from gallery_app.core.chat.session import NOTHING_FOUND, ChatSession
from gallery_app.core.errors import AppError
from gallery_app.core.store import open_store
from tests.chat_helpers import DEMO_CHAT, HashEmbedder, ScriptedLLM


@pytest.fixture
def conn(tmp_path):
    connection = open_store(tmp_path / "gallery.db")
    yield connection
    connection.close()


@pytest.mark.parametrize("question", ["", "   ", "\n\t "])
def test_an_empty_question_says_type_a_question_first(conn, question):
    session = ChatSession(conn, HashEmbedder(), ScriptedLLM(["Daniel paid."]))
    with pytest.raises(AppError, match="^Type a question first"):
        session.answer(question)
    assert not session.conversation.turns  # nothing was remembered as a turn


@pytest.mark.parametrize("k", [0, -3])
def test_no_passages_is_refused_by_name(conn, k):
    with pytest.raises(AppError) as error:
        ChatSession(conn, HashEmbedder(), ScriptedLLM([]), AskOptions(passages=k))
    assert f"passages per question is {k}" in str(error.value) and NOTHING_FOUND not in str(error.value)


@pytest.mark.timeout(20)
def test_a_context_too_small_is_refused_before_searching(conn):
    with pytest.raises(PromptTooLong, match="A context of 512 tokens with 512 kept for the answer"):
        ChatSession(conn, HashEmbedder(), ScriptedLLM([], n_ctx=512), AskOptions(answer_tokens=512))


@pytest.mark.timeout(20)
def test_a_question_that_alone_overflows_the_window_is_refused_with_a_message(conn):
    """The settings pass the check, but a huge question leaves no room: a message, never a loop."""
    import_chat(conn, DEMO_CHAT, HashEmbedder())
    session = ChatSession(conn, HashEmbedder(), ScriptedLLM(["Daniel paid."], n_ctx=512), AskOptions(answer_tokens=96))
    with pytest.raises(PromptTooLong, match="Ask a shorter question"):
        session.answer("Who paid for the hotel? " + "really " * 600)
