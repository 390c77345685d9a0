"""Retrieval on real group chats written by other people (../shared/fixtures/chat_qa), offline e5.

The recall floors sit a little below what bench/chat_eval.py measured (docs/chat.md), so a change
that loses answers on real chats fails here instead of passing silently on the demo chat.
"""

from __future__ import annotations


import pytest

from gallery_app.core.chat.ask_options import AskOptions, FollowUps
from gallery_app.core.chat.evidence import closest_message
from gallery_app.core.chat.second_reading import open_second_reading
from gallery_app.core.chat.session import ChatSession
from gallery_app.core.models.loading import open_text_embedder
from tests.chat_helpers import load_bench
from tests.conftest import SHARED_FIXTURES, require_shared_fixtures

# The floors are the first stage's (no second reading): reading every question again took 10 minutes on an
# AVX-512 machine and over 25 on an AVX2-only EPYC, which put the suite near CI's limit. What the reading
# adds is held by es11 below; its numbers are bench/chat_eval.py's (docs/chat.md).
pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(1800)]

CHAT_QA = SHARED_FIXTURES / "chat_qa"
#: R@3 floors per set, a question's worth below what the first stage measured (docs/chat.md, "All six real
#: chats", with windows that finish a person's turn: 0.78, 0.73, 0.65, 0.65, 0.70, 0.83).
RECALL_AT_3_FLOOR = {"dutch_friends": 0.75, "english_students": 0.68, "hinglish_class": 0.61,
                     "indonesian_helpdesk": 0.60, "nigerian_admissions": 0.65, "spanish_students": 0.78}
#: The top passage's answering message is a gold one this often, over the six (measured 0.40 since a game's
#: shared result is never that message, whatever its header says; 0.39 before; 0.36 before it was chosen from
#: the whole passage).
EVIDENCE_AT_1_FLOOR = 0.38
#: The first passage holds a gold message this often, over the six (measured 0.51; 0.52 read again).
MEAN_RECALL_AT_1_FLOOR = 0.48
#: The best ten passages hold a gold message this often, over the six (measured 0.83 since a broadcast pasted
#: again is one passage among them, 0.82 before).
MEAN_RECALL_AT_10_FLOOR = 0.81


def _chat_eval():
    return load_bench("chat_eval")


@pytest.fixture(scope="module")
def chat_eval():
    require_shared_fixtures()
    return _chat_eval()


@pytest.fixture(scope="module")
def embedder():
    embedder = open_text_embedder(None, threads=2)
    yield embedder
    embedder.release()


@pytest.fixture(scope="module")
def real_chats(chat_eval, embedder, tmp_path_factory):
    from gallery_app.core.chat.chunking import ChunkingConfig

    chats = {}
    for name in chat_eval.REAL_SETS:
        questions, chat = chat_eval.SETS[name]
        chats[name] = (chat_eval.load_questions(questions), chat_eval.import_for_eval(chat, embedder, ChunkingConfig()))
    yield chats
    for _questions, imported in chats.values():
        imported.conn.close()


def _questions(real_chats, name: str) -> dict[str, dict]:
    return {item["id"]: item for item in real_chats[name][0]}


def _rank(retrieval, imported, gold_lines) -> int | None:
    gold = {imported.line_to_message[line] for line in gold_lines}
    return next((rank for rank, match in enumerate(retrieval.matches, start=1) if gold & set(match.message_ids)), None)


def _ranker(real_chats, embedder, reading, name: str, item_id: str):
    """A function that asks one question as the app does (read again, the best 15) and gives its answer's rank, so
    a test can ask it again after changing a constant."""
    item = _questions(real_chats, name)[item_id]
    _questions_, imported = real_chats[name]

    def rank() -> int | None:
        session = ChatSession(imported.conn, embedder, None, AskOptions(passages=15), second_reading=reading)
        return _rank(session.retrieve(item["question"])[1], imported, item["gold_lines"])

    return rank


@pytest.fixture(scope="module")
def reading():
    """As the app asks: the best passages read again by the offline Gemma 3 270M."""
    reading = open_second_reading()
    assert reading is not None
    yield reading
    reading.release()


@pytest.fixture(scope="module")
def results(chat_eval, real_chats, embedder):
    options = chat_eval.Options(AskOptions(read_again=False), verbose=False, second_reading=None)
    return {name: chat_eval.evaluate(name, questions, imported, embedder, None, options)
            for name, (questions, imported) in real_chats.items()}


@pytest.mark.parametrize("name", sorted(RECALL_AT_3_FLOOR))
def test_recall_at_3_on_real_chats_holds(results, name):
    result = results[name]
    overall = result.recall["overall"][3]
    recall = sum(overall) / len(overall)
    assert recall >= RECALL_AT_3_FLOOR[name], [(m["id"], m["rank"]) for m in result.misses]


def test_the_message_named_first_answers_often_enough(chat_eval, results):
    summary = chat_eval.summarise(list(results.values()))
    assert summary["evidence"] >= EVIDENCE_AT_1_FLOOR, summary


def test_the_first_passage_answers_often_enough(chat_eval, results):
    summary = chat_eval.summarise(list(results.values()))
    assert summary["mean"][1] >= MEAN_RECALL_AT_1_FLOOR, summary


def test_the_best_ten_passages_answer_often_enough(chat_eval, results):
    summary = chat_eval.summarise(list(results.values()))
    assert summary["mean"][10] >= MEAN_RECALL_AT_10_FLOOR, summary


def test_a_follow_up_finds_its_answer_near_the_previous_one(real_chats, embedder):
    """en02 "And how much did Rahul end up paying for his, tax included?" after Akshay's phone plan."""
    questions, imported = real_chats["english_students"]
    opening, follow_up = _questions(real_chats, "english_students")["en01"], _questions(real_chats, "english_students")["en02"]
    assert follow_up["previous_question"] == opening["question"]
    session = ChatSession(imported.conn, embedder, None, AskOptions(passages=3, follow_ups=FollowUps.NEIGHBOURHOOD))
    _query, first = session.retrieve(opening["question"])
    session.remember(opening["question"], first, "")
    _query, retrieval = session.retrieve(follow_up["question"])
    assert _rank(retrieval, imported, follow_up["gold_lines"]) is not None


def test_a_detail_of_a_long_announcement_is_found(real_chats, embedder):
    """Item 4 of an 18-item, 5,000-character list of hurricane help (line 7299): one sentence of it."""
    _questions_, imported = real_chats["english_students"]
    session = ChatSession(imported.conn, embedder, None, AskOptions(passages=3))
    _query, retrieval = session.retrieve(
        "Which furniture store opened its shops so that people could stay there with their pets?")
    assert _rank(retrieval, imported, [7299]) is not None
    best = retrieval.matches[0]
    assert best.focus_message_ids == [imported.line_to_message[7299]]


def test_the_reply_beside_the_window_found_is_highlighted(real_chats, embedder):
    """es08: e5's best window is the chatter after dam's answer ("Google docs igual / Y google sheets / tmbn");
    the answering message is chosen from the whole passage, so the card highlights one of dam's replies."""
    item = _questions(real_chats, "spanish_students")["es08"]
    _questions_, imported = real_chats["spanish_students"]
    session = ChatSession(imported.conn, embedder, None, AskOptions(passages=3))
    _query, retrieval = session.retrieve(item["question"])
    best = retrieval.matches[0]
    assert best.answer_message_id in imported.gold_messages(item), best.excerpt
    assert len(best.focus_message_ids) > 1  # shown with the window that was found


def test_an_announcement_written_as_two_messages_is_found_whole(real_chats, embedder):
    """es21: dam says he is leaving aeronautics in two messages ("Bueno me voy a pasar a Electrónica" / "Tengo q
    ver todo lo de los trámites pero ya estoy bastante decidido"), which windows counted in fours split; a
    window that finishes his turn ranks it 2nd for the English question (11th split)."""
    item = _questions(real_chats, "spanish_students")["es21"]
    _questions_, imported = real_chats["spanish_students"]
    session = ChatSession(imported.conn, embedder, None, AskOptions(passages=3))
    _query, retrieval = session.retrieve(item["question"])
    assert _rank(retrieval, imported, item["gold_lines"]) is not None


@pytest.mark.parametrize("question", ["Wat is de naam van deze groep?", "When was the group created?"])
def test_the_group_line_is_findable(real_chats, embedder, question):
    """The group's name and start are only in WhatsApp's own line 'You created group "…"' (line 2)."""
    _questions_, imported = real_chats["dutch_friends"]
    session = ChatSession(imported.conn, embedder, None, AskOptions(passages=3))
    _query, retrieval = session.retrieve(question)
    assert _rank(retrieval, imported, [2]) is not None


@pytest.mark.parametrize(("name", "question"), [("dutch_friends", "Who made this group?"),
                                                ("nigerian_admissions", "Who created this group?")])
def test_the_line_that_names_the_group_is_the_answer_it_highlights(real_chats, embedder, name, question):
    """WhatsApp's own line 'X created group "…"' (line 2 of both chats) was never the answering message, since it
    has no sender: the card highlighted someone's chatter beside it and the decline quoted that instead."""
    _questions_, imported = real_chats[name]
    session = ChatSession(imported.conn, embedder, None, AskOptions(passages=3))
    _query, retrieval = session.retrieve(question)
    best = retrieval.matches[0]
    assert best.answer_message_id == imported.line_to_message[2], best.excerpt
    closest = closest_message(imported.conn, best, question)
    assert closest.describe().startswith(f"Closest message: {closest.timestamp:%d %b %Y}: ")  # no "None, "
    assert "created group" in closest.describe()


def _ranks_first_and_read_again(real_chats, embedder, reading, name: str, item_id: str) -> dict[bool, int | None]:
    """The gold passage's rank among the best 15, by the first stage alone (False) and read again (True)."""
    item = _questions(real_chats, name)[item_id]
    _questions_, imported = real_chats[name]
    ranks = {}
    for read_again in (False, True):
        session = ChatSession(imported.conn, embedder, None, AskOptions(passages=15, read_again=read_again),
                              second_reading=reading)
        _query, retrieval = session.retrieve(item["question"])
        ranks[read_again] = _rank(retrieval, imported, item["gold_lines"])
    return ranks


def test_the_second_reading_brings_up_the_passage_that_answers(real_chats, embedder, reading):
    """es11: the canteen's coffee prices are in a Spanish exchange the embedder ranks 7th for the English
    question; read again, the passage answers it within the first three."""
    ranks = _ranks_first_and_read_again(real_chats, embedder, reading, "spanish_students", "es11")
    assert ranks[False] > 3 and ranks[True] <= 3, ranks


def test_a_passage_the_first_stage_ranks_twelfth_is_read_again(real_chats, embedder, reading):
    """hi13: the Hinglish answer on which email to register with ("Sab apni personal id se karna iitwali se
    nahi") is the first stage's 12th passage; the second reading reads the best 15 and brings it into the top 3
    (with the best 10 it was never read)."""
    ranks = _ranks_first_and_read_again(real_chats, embedder, reading, "hinglish_class", "hi13")
    assert ranks[False] > 10 and ranks[True] <= 3, ranks


def test_a_question_about_time_is_read_with_each_passage_s_day(real_chats, embedder, reading, monkeypatch):
    """hi07, a follow-up: "And when was it held last year?" after "On which dates is Cognizance being held this
    year?". The reader sees each excerpt under its day when a question asks when, and brings the answer
    ("April ya may me hua tha", "15-17th April") into the top 3; without the day it was 4th."""
    from gallery_app.core.chat import retrieval as retrieval_module

    item = _questions(real_chats, "hinglish_class")["hi07"]
    _questions_, imported = real_chats["hinglish_class"]

    def rank() -> int | None:
        session = ChatSession(imported.conn, embedder, None, AskOptions(passages=15), second_reading=reading)
        session.remember(item["previous_question"], session.retrieve(item["previous_question"])[1], "")
        return _rank(session.retrieve(item["question"])[1], imported, item["gold_lines"])

    with_day = rank()
    monkeypatch.setattr(retrieval_module, "READ_WITH_DAY", 0)
    assert with_day <= 3 < rank(), with_day


def test_the_calibrated_reading_puts_the_passage_that_answers_first(real_chats, embedder, reading, monkeypatch):
    """ng14, "What minimum UTME score does the posted notice require for the full-time ND screening?": the
    plain reading's first card highlighted a news summary posted the next day ("*BREAKING NEWS* … Cut off marks
    are 150 for ND"); calibrated (each reading minus how likely "What did they say?" is after the same excerpt),
    the first card highlights the posted notice itself, which the question asks about."""
    from gallery_app.core.chat import second_reading as second_reading_module

    item = _questions(real_chats, "nigerian_admissions")["ng14"]
    _questions_, imported = real_chats["nigerian_admissions"]
    gold = {imported.line_to_message[line] for line in item["gold_lines"]}

    def first_answer() -> int | None:
        session = ChatSession(imported.conn, embedder, None, AskOptions(passages=15), second_reading=reading)
        return session.retrieve(item["question"])[1].matches[0].answer_message_id

    calibrated = first_answer()
    monkeypatch.setattr(second_reading_module, "CALIBRATION", 0.0)
    assert calibrated in gold and first_answer() not in gold, calibrated


def test_a_question_for_an_amount_finds_the_message_with_the_price(real_chats, embedder, reading, monkeypatch):
    """en09, "What price did Rahul ask for the SUV he advertised to the group?": the advert ("Porsche Cayenne S
    on sale - … 150000 Dhs") was 4th behind passages about phone covers and the cars Rahul has; passages whose
    window says a number are lifted for a question that asks for an amount, and it is in the top 3."""
    from gallery_app.core.chat import retrieval as retrieval_module

    rank = _ranker(real_chats, embedder, reading, "english_students", "en09")
    lifted = rank()
    monkeypatch.setattr(retrieval_module, "AMOUNT_LIFT", 0.0)
    assert lifted <= 3 < rank(), lifted


def test_the_reader_reads_unsaved_numbers_as_members_and_puts_the_answer_first(real_chats, embedder, reading,
                                                                              monkeypatch):
    """id08, "Is there a UTG 1 test site in Balikpapan? If not, which one is closest?", on a helpdesk whose askers
    are unsaved numbers: read with "+62 8xx-xxxx-xxxx:" on every line, the passage that answers was second; read
    with "Member A:" instead, it is first."""
    from gallery_app.core.chat import retrieval as retrieval_module

    rank = _ranker(real_chats, embedder, reading, "indonesian_helpdesk", "id08")
    plain = rank()
    monkeypatch.setattr(retrieval_module, "READ_PLAIN_NUMBERS", False)
    assert plain == 1 < rank(), plain
