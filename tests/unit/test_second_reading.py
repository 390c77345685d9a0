"""The second reading (core/chat/second_reading.py) as ``ChatRetriever`` uses it, with a reader whose
judgement the test sets: what it moves, what it keeps, and a reader that fails.

The real reader (Gemma 3 270M in a child process) is in tests/e2e/test_second_reading_model.py; its effect
on the real chats is held in tests/e2e/test_real_chat_retrieval.py.
"""

from __future__ import annotations

from datetime import date

import numpy as np
import pytest

from gallery_app.core.chat import second_reading
from gallery_app.core.chat.chunking import ChunkingConfig
from gallery_app.core.chat.importer import import_chat
from gallery_app.core.chat.question_dates import spelled_day
from gallery_app.core.chat.retrieval import ChatRetriever
from gallery_app.core.chat.second_reading import PROMPT, SecondReading, calibrated_order, reread_order
from gallery_app.core.errors import ModelError
from gallery_app.core.models.runtimes.llama_process import LanguageModelCrashed
from gallery_app.core.store import open_store
from tests.small_chats import open_small_library
from tests.text_embedders import WordHashEmbedder, write_chat

EMBEDDER = WordHashEmbedder()
QUESTION = "Who is bringing the inflatable kayak?"


class Reader:
    """Finds the question likely after a passage that holds ``favourite``, unlikely after any other."""

    def __init__(self, favourite: str):
        self.favourite = favourite
        self.read: list[tuple[list[str], str]] = []
        self.continuations: list[list[str]] = []

    def continuation_likelihoods(self, prompts, continuations):
        question, *_content_free = continuations
        self.read.append((list(prompts), question))
        self.continuations.append(list(continuations))
        # A question that asks nothing in particular is as likely after every passage: calibration changes nothing.
        return [[-1.0 if self.favourite in prompt else -5.0] + [-3.0] * len(_content_free) for prompt in prompts]


class BrokenReader:
    def continuation_likelihoods(self, prompts, continuations):
        raise LanguageModelCrashed("The language model stopped unexpectedly (signal 11, SIGSEGV).")


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    conn, _trip, _flat = open_small_library(tmp_path_factory.mktemp("library"), EMBEDDER, ChunkingConfig(lead_in=False))
    yield conn
    conn.close()


def test_the_reader_decides_between_passages_the_embedder_found_alike_and_keeps_a_clear_lead(library, monkeypatch):
    # Ten passages read: how clear a lead is depends on how many are read (z-scores over them), and this small
    # library has not many more than ten.
    monkeypatch.setattr(second_reading, "READ_AGAIN_DEPTH", 10)
    question = "What did Maya want with a coffee?"
    plain = ChatRetriever(library, EMBEDDER).retrieve(question, k=10)
    favourite = plain.matches[4]  # about as near as the third and fourth, far below the first
    assert plain.matches[2].score - favourite.score < 0.1 < plain.matches[0].score - favourite.score
    reader = Reader(favourite.excerpt.splitlines()[0])
    read = ChatRetriever(library, EMBEDDER, second_reading=SecondReading(reader)).retrieve(question, k=10)
    order = [m.chunk_id for m in read.matches]
    assert order[0] == plain.matches[0].chunk_id
    assert order.index(favourite.chunk_id) < order.index(plain.matches[2].chunk_id)
    # The same passages, ranked by scores that still fall from the first to the last (notes merge on them).
    assert sorted(order) == sorted(m.chunk_id for m in plain.matches)
    scores = [m.score for m in read.matches]
    assert scores == sorted(scores, reverse=True)
    assert not read.notices
    # What it read: each passage's excerpt in the prompt, and the question after it.
    (prompts, continuation), = reader.read
    assert continuation == " " + question
    assert prompts[0] == PROMPT.format(passage=plain.matches[0].excerpt)


def test_a_reader_that_fails_leaves_the_first_order_and_says_so(library):
    plain = ChatRetriever(library, EMBEDDER).retrieve(QUESTION, k=6)
    read = ChatRetriever(library, EMBEDDER, second_reading=SecondReading(BrokenReader())).retrieve(QUESTION, k=6)
    assert [m.chunk_id for m in read.matches] == [m.chunk_id for m in plain.matches]
    assert [m.score for m in read.matches] == [m.score for m in plain.matches]
    assert read.notices == ["The second reading of the passages failed, so they are in the first search's order."]


def test_the_reading_weighs_half_the_first_stage():
    scores = np.array([3.0, 2.0, 1.0])
    # A reading that slightly prefers the second passage does not beat a clear first-stage lead...
    assert reread_order(scores, np.array([-2.0, -1.9, -3.0]), 0.5).tolist() == [0, 1, 2]
    # ...but one that reads it as far likelier does.
    assert reread_order(np.array([2.1, 2.0, 1.0]), np.array([-4.0, -1.0, -4.0]), 0.5).tolist() == [1, 0, 2]


def test_a_failing_model_is_a_model_error():
    assert issubclass(LanguageModelCrashed, ModelError)


def test_a_question_about_time_is_read_with_each_passage_s_day(library):
    """The reader weighs a passage's day only when the question is about time ("When…", "on 3 May"): the day
    heads each excerpt it reads, as on the passage's card; another question's excerpts are read without it."""
    for question, with_day in (("When is Maya bringing the inflatable kayak?", True), (QUESTION, False)):
        reader = Reader("kayak")
        read = ChatRetriever(library, EMBEDDER, second_reading=SecondReading(reader)).retrieve(question, k=6)
        (prompts, _continuation), = reader.read
        first = read.matches[0]
        shown = PROMPT.format(passage=f"{spelled_day(date.fromisoformat(first.day))}\n{first.excerpt}")
        assert (shown in prompts) is with_day, prompts[0][:120]
        assert any(first.excerpt in prompt for prompt in prompts)


def test_the_calibrated_reading_chooses_which_of_the_best_three_comes_first_and_nothing_else():
    """An excerpt that makes any question likely (a broadcast) is read as likely for this question too; the
    calibrated reading (minus a content-free question's likelihood) sees through that for the first place, but
    which passages make the best three is the plain reading's."""
    scores = np.array([2.0, 1.9, 1.8, 1.7, 0.9])
    likelihoods = np.array([-1.0, -1.5, -1.6, -2.5, -4.0])
    # The first passage's excerpt makes "What did they say?" likely too: the question is no likelier there.
    content_free = np.array([-0.5, -3.0, -3.0, -6.0, -3.0])
    plain = reread_order(scores, likelihoods, 0.5)
    assert plain[:3].tolist() == [0, 1, 2]
    calibrated = calibrated_order(scores, likelihoods, content_free, 0.5)
    assert calibrated[0] != 0 and sorted(calibrated[:3].tolist()) == [0, 1, 2]
    # The others keep the plain reading's order: only the first place is the calibrated reading's.
    assert calibrated[1:].tolist() == [i for i in plain.tolist() if i != calibrated[0]]
    # The fourth passage comes first calibrated (after its excerpt "What did they say?" is least likely, so
    # calibration lifts it most) but stays out of the best three.
    assert reread_order(scores, likelihoods - content_free, 0.5)[0] == 3
    assert calibrated[3:].tolist() == plain[3:].tolist()
    # A content-free question as likely after every passage changes nothing.
    assert calibrated_order(scores, likelihoods, np.full(5, -2.0), 0.5).tolist() == plain.tolist()


@pytest.mark.parametrize("calibration, asked", [(1.0, [" " + QUESTION, " What did they say?"]), (0.0, [" " + QUESTION])])
def test_the_content_free_question_is_asked_only_when_it_chooses_the_first_place(library, monkeypatch, calibration,
                                                                                   asked):
    # Its tokens make the reading about 1.2 x as long: not paid for when the calibrated reading is turned off.
    monkeypatch.setattr(second_reading, "CALIBRATION", calibration)
    reader = Reader("kayak")
    read = ChatRetriever(library, EMBEDDER, second_reading=SecondReading(reader)).retrieve(QUESTION, k=6)
    assert reader.continuations == [asked]
    assert "kayak" in read.matches[0].excerpt


def test_the_reader_reads_senders_saved_by_no_name_as_members_and_the_card_keeps_their_numbers(tmp_path):
    """A helpdesk's excerpt of unsaved numbers: the reader reads "Member A", "Member B" and no @-mentioned digits
    (a dozen tokens a line that say nothing asked); the card, and the model that answers, keep who wrote what."""
    chat = ["07/02/2018, 12:13 - +62 822-2142-7542: kak kalau pilih jurusan dkv tes tambahannya kapan?",
            "07/02/2018, 12:20 - +62 878-8491-4029: @6282221427542 sama kak aku juga mau tanya dkv",
            "07/02/2018, 13:41 - SMB Telkom: Dihari yang sama dek, tapi beda jamnya",
            "07/02/2018, 13:41 - SMB Telkom: Jam 12.10",
            "08/02/2018, 09:00 - +62 822-2142-7542: makasih kak",
            "20/03/2018, 10:00 - SMB Telkom: Pendaftaran bisa di lakukan di web"]
    conn = open_store(tmp_path / "gallery.db")
    try:
        import_chat(conn, write_chat(tmp_path, chat), EMBEDDER, config=ChunkingConfig(lead_in=False))
        reader = Reader("dkv")
        found = ChatRetriever(conn, EMBEDDER, second_reading=SecondReading(reader)).retrieve(
            "kapan tes tambahan jurusan dkv?", k=2)
    finally:
        conn.close()
    (prompts, _question), = reader.read
    read = next(prompt for prompt in prompts if "dkv" in prompt)
    assert "Member A: kak kalau pilih jurusan dkv tes tambahannya kapan?" in read
    assert "Member B: sama kak aku juga mau tanya dkv" in read
    assert "SMB Telkom: Dihari yang sama dek, tapi beda jamnya" in read
    assert "+62" not in read and "6282221427542" not in read
    card = next(match for match in found.matches if "dkv" in match.excerpt)
    assert "+62 822-2142-7542: kak kalau pilih jurusan dkv" in card.excerpt
    assert "@6282221427542" in card.excerpt
