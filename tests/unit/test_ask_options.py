"""One default per asking option: the CLI, the session, the prompt builder and the LLM all start from AskOptions.

Before: the answer length was 96 tokens in the core and the CLI but 160 in the window, the context size
was written four times, and the prompt builder defaulted to whole passages while the session gave excerpts.
"""

from __future__ import annotations

import inspect

import pytest

from gallery_app.cli import build_parser
from gallery_app.core.chat.ask_options import AskOptions, FollowUps
from gallery_app.core.chat.prompting import PromptBuilder
from gallery_app.core.chat.session import ChatSession
from gallery_app.core.models import loading, memory
from gallery_app.core.models.runtimes.llama import ChatLLM
from gallery_app.core.store import open_store
from tests.chat_helpers import HashEmbedder, ScriptedLLM

DEFAULTS = AskOptions()


@pytest.mark.parametrize("command", ["ask", "repl"])
def test_the_cli_defaults_are_the_core_defaults(command):
    args = build_parser().parse_args(["chat", command, *(["Who paid?"] if command == "ask" else [])])
    assert (args.passages, args.answer_tokens, args.context, FollowUps(args.follow_ups)) == (
        DEFAULTS.passages, DEFAULTS.answer_tokens, DEFAULTS.context_tokens, DEFAULTS.follow_ups)


def test_a_session_and_its_prompt_builder_ask_with_the_defaults(tmp_path):
    conn = open_store(tmp_path / "gallery.db")
    try:
        session = ChatSession(conn, HashEmbedder(), ScriptedLLM([]))
        assert session.options == DEFAULTS
        assert (session.prompts.answer_tokens, session.prompts.excerpts) == (DEFAULTS.answer_tokens, DEFAULTS.excerpts)
    finally:
        conn.close()
    builder = PromptBuilder(ScriptedLLM([]))
    assert (builder.answer_tokens, builder.excerpts) == (DEFAULTS.answer_tokens, DEFAULTS.excerpts)


def test_the_llm_is_opened_with_the_one_context_size():
    assert DEFAULTS.context_tokens == memory.CONTEXT_TOKENS
    for opener in (ChatLLM.__init__, loading.open_chat_llm):
        assert inspect.signature(opener).parameters["n_ctx"].default == DEFAULTS.context_tokens
    assert inspect.signature(memory.ram_needed).parameters["n_ctx"].default == DEFAULTS.context_tokens


def test_follow_ups_given_by_name_are_the_mode():
    assert AskOptions(follow_ups="previous").follow_ups is FollowUps.PREVIOUS
    with pytest.raises(ValueError):
        AskOptions(follow_ups="sideways")
