"""Asking chats and notes together, with the stand-in embedder and LLM: which sources are searched, and what
the answer says when they don't tell (issue 24)."""

from __future__ import annotations

import pytest

from gallery_app.core.chat.ask_options import AskOptions
from gallery_app.core.chat.events import (
    NOTHING_FOUND_IN_BOTH, NOTHING_FOUND_IN_NOTES, UNSUPPORTED_PASSAGES,
)
from gallery_app.core.chat.evidence import match_lines
from gallery_app.core.chat.session import CHATS, NOTES, ChatSession
from gallery_app.core.notes.indexer import index_folder
from tests.chat_helpers import ScriptedLLM
from tests.small_chats import open_small_library
from tests.text_embedders import WordHashEmbedder

EMBEDDER = WordHashEmbedder()
BOILER = ("# Boiler\n\nInstalled in March 2021 by Heatwell.\n\n## Warranty\n\n"
          "The boiler warranty runs seven years and needs a yearly service to stay valid.\n")


@pytest.fixture
def library(tmp_path):
    conn, _trip, _flat = open_small_library(tmp_path, EMBEDDER)
    notes = tmp_path / "Notes"
    notes.mkdir()
    (notes / "House.md").write_text(BOILER, "utf-8")
    index_folder(conn, notes, EMBEDDER)
    return conn


def test_one_question_finds_a_note_beside_the_chats(library):
    retrieval = ChatSession(library, EMBEDDER, options=AskOptions(passages=3)).retrieve(
        "how long does the boiler warranty run")[1]
    top = retrieval.matches[0]
    assert top.is_note and (top.chat_title, top.day) == ("House", "Boiler")  # both short sections, one chunk
    assert top.chat_id is None and top.key == ("note", top.chunk_id)
    assert retrieval.describe() == "Found 3 passages in 1 chat and 1 note"
    assert [line.text for line in match_lines(library, top) if line.focus] == [
        "The boiler warranty runs seven years and needs a yearly service to stay valid."]


def test_sources_narrow_what_is_searched(library):
    question = "how long does the boiler warranty run"
    only_chats = ChatSession(library, EMBEDDER, sources=frozenset({CHATS})).retrieve(question)[1]
    assert only_chats.matches and not any(m.is_note for m in only_chats.matches)
    only_notes = ChatSession(library, EMBEDDER, sources=frozenset({NOTES})).retrieve(question)[1]
    assert only_notes.matches and all(m.is_note for m in only_notes.matches)
    assert only_notes.describe() == "Found 1 passage in 1 note"


def test_a_declined_answer_from_a_note_names_the_closest_note_line(library):
    llm = ScriptedLLM(["It runs", " 12 years."])  # a number in no passage: made up
    answer = ChatSession(library, EMBEDDER, llm, sources=frozenset({NOTES})).answer(
        "how long does the boiler warranty run")
    assert answer.declined
    assert answer.text == (f"{UNSUPPORTED_PASSAGES}\nClosest note: House (Boiler): The boiler warranty "
                           "runs seven years and needs a yearly service to stay valid.")


@pytest.mark.parametrize("sources, said", [(frozenset({NOTES}), NOTHING_FOUND_IN_NOTES),
                                           (frozenset({CHATS, NOTES}), NOTHING_FOUND_IN_BOTH)])
def test_nothing_found_says_where_it_looked(library, sources, said):
    session = ChatSession(library, EMBEDDER, ScriptedLLM(["x"]), AskOptions(min_score=1.01), sources=sources)
    assert session.answer("how long does the boiler warranty run").text == said
