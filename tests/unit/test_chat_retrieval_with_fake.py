"""Finding passages with the word-hash test embedder, whose similarities are shared words, so rankings can be asserted.

The fast twin of tests/e2e/test_chat_retrieval.py (real MiniLM there). Everything goes through
``ChatRetriever.retrieve``: rare words, the chats asked, a day named in the question, a follow-up
near the previous answer, passages not embedded yet, and ``min_score``.
"""

from __future__ import annotations

from datetime import date

import pytest

from gallery_app.core.chat.chunking import ChunkingConfig
from gallery_app.core.chat.importer import import_chat, reindex
from gallery_app.core.chat.question_dates import DaySpan
from gallery_app.core.chat.repository import messages_by_id
from gallery_app.core.chat.retrieval import ChatRetriever
from gallery_app.core.errors import Cancelled
from gallery_app.core.store import open_store
from tests.small_chats import JONAS, LIGHTHOUSE, open_small_library
from tests.text_embedders import WordHashEmbedder, write_chat

EMBEDDER = WordHashEmbedder()


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """Both small chats imported once, for the read-only tests: (conn, trip's chat id, Jonas's chat id).

    Without lead-ins (the message before a window, read with it): with word-hash vectors every filler word a
    lead-in adds counts as much as a rare one, so rankings here would be about those words, not about what
    these tests check (rare words, the chats asked, a named day, follow-ups). The lead-in's own tests are in
    test_chunking.py and below (``test_a_reply_that_opens_a_day_is_found_by_the_question_it_answers``); its
    effect on ranking is measured on the real chats (docs/chat.md).
    """
    conn, trip, flat = open_small_library(tmp_path_factory.mktemp("library"), EMBEDDER, ChunkingConfig(lead_in=False))
    yield conn, trip, flat
    conn.close()


def retrieve(library, question: str, **kwargs):
    conn, _trip, _flat = library
    return ChatRetriever(conn, EMBEDDER).retrieve(question, **kwargs)


def rank_of(retrieval, words: str) -> int | None:
    """1-based rank of the first passage containing ``words``."""
    return next((rank for rank, m in enumerate(retrieval.matches, 1) if words in m.text), None)


@pytest.mark.parametrize("question, expected, day", [
    ("Who is bringing the inflatable kayak?", "Daniel: I'll bring the inflatable kayak", "2024-04-14"),
    ("What is the rent, and are bills included?", "Jonas: 950 a month, bills not included", "2024-04-15"),
    ("Where were the huge dumplings?", "Maya: Dinner at the noodle bar was lovely tonight", "2024-04-03"),
])
def test_a_question_sharing_rare_words_with_one_message_finds_its_passage_first(library, question, expected, day):
    conn, trip, flat = library
    found = retrieve(library, question, k=4)
    best = found.matches[0]
    assert expected in best.text and best.day == day
    assert best.chat_title == ("Jonas" if best.chat_id == flat else "Lighthouse trip")
    assert expected in best.excerpt  # the lines the person is shown first
    assert set(best.focus_message_ids) <= set(best.message_ids)
    assert 0 < best.similarity <= 1 and best.similarity == max(m.similarity for m in found.matches)
    assert found.unindexed == 0 and found.spans == []


def test_k_caps_the_matches_best_first(library):
    many = retrieve(library, "Who is bringing the inflatable kayak?", k=20)
    assert len(many.matches) == many.passage_count > 4
    assert [m.chunk_id for m in retrieve(library, "Who is bringing the inflatable kayak?", k=2).matches] == \
        [m.chunk_id for m in many.matches[:2]]
    assert [m.score for m in many.matches] == sorted((m.score for m in many.matches), reverse=True)


def test_chats_restricts_the_search_to_those_chats(library):
    conn, trip, flat = library
    everywhere = retrieve(library, "ferry", k=3)
    assert {m.chat_id for m in everywhere.matches} == {trip, flat}
    assert everywhere.describe() == "Found 3 passages in 2 chats"

    only_flat = retrieve(library, "ferry", k=3, chats=[flat])
    assert {m.chat_id for m in only_flat.matches} == {flat} and only_flat.describe() == "Found 3 passages in 1 chat"
    assert "The ferry was cancelled" in only_flat.matches[0].text
    only_trip = retrieve(library, "ferry", k=3, chats=[trip])
    assert {m.chat_id for m in only_trip.matches} == {trip}
    assert all("Jonas" not in m.text for m in only_trip.matches)
    # Both chats named is the same as no restriction (another code path than one chat).
    both = retrieve(library, "ferry", k=3, chats=[trip, flat])
    assert [m.chunk_id for m in both.matches] == [m.chunk_id for m in everywhere.matches]
    nowhere = retrieve(library, "ferry", k=3, chats=[999])
    assert nowhere.matches == [] and nowhere.describe() == "No passages found."


@pytest.mark.parametrize("day, other_day, words", [("3 April", "2024-04-17", "noodle bar"),
                                                    ("17 April", "2024-04-03", "pizza place")])
def test_a_named_day_lifts_the_passages_on_that_day(library, day, other_day, words):
    conn, trip, _flat = library
    # Without a day the two dinners are about as good as each other.
    undated = retrieve(library, "Where did we have dinner?", k=2, chats=[trip])
    assert {rank_of(undated, "noodle bar"), rank_of(undated, "pizza place")} == {1, 2}

    found = retrieve(library, f"Where did we have dinner on {day}?", k=4, chats=[trip])
    assert words in found.matches[0].text
    assert found.matches[0].score - next(m.score for m in found.matches if m.day == other_day) > 1.0
    named = date(2024, 4, int(day.split()[0]))
    assert found.spans == [DaySpan(named, named)]


@pytest.mark.parametrize("day", [3, 5, 7, 10, 14, 17, 24])
def test_what_happened_on_a_day_shows_that_days_passages_first(library, day):
    """A question that is only a date shares no words with any passage: the day named is what ranks them.

    (Its few chance similarities, z-scored, still put one other passage ahead at most.)
    """
    conn, trip, _flat = library
    found = retrieve(library, f"What happened on {day} April?", k=2, chats=[trip])
    assert f"2024-04-{day:02d}" in [m.day for m in found.matches]


def test_a_follow_up_lifts_passages_near_the_previous_answer(library):
    """"And the ferry?" after the cottage's booking means the trip's ferry, three hours after it, not Maya's commute."""
    previous = retrieve(library, "Who booked the cottage and paid the deposit?", k=3)
    assert "Priya: I booked the lighthouse cottage" in previous.matches[0].text
    trip_ferry, commute = "leaves Penzance at 9:15", "Missed the ferry to work"

    alone = retrieve(library, "And the ferry?", k=6)
    assert rank_of(alone, commute) < rank_of(alone, trip_ferry)
    near = retrieve(library, "And the ferry?", k=6, follow_up_of=previous.matches)
    assert rank_of(near, trip_ferry) < rank_of(near, commute)
    # As ChatSession asks a follow-up: with the previous question too, and near its answer.
    follow_up = retrieve(library, "And the ferry?", k=6,
                         context_query="Who booked the cottage and paid the deposit? And the ferry?",
                         follow_up_of=previous.matches)
    assert rank_of(follow_up, trip_ferry) < rank_of(follow_up, commute)
    # A follow-up without a day of its own keeps the day of the question it follows.
    dated = retrieve(library, "And who came?", k=3, context_query="What happened on 17 April? And who came?")
    assert dated.spans == [DaySpan(date(2024, 4, 17), date(2024, 4, 17))]


def test_unindexed_counts_the_windows_a_cancelled_import_did_not_embed(tmp_path):
    conn = open_store(tmp_path / "gallery.db")
    embedder = WordHashEmbedder()
    trip = import_chat(conn, write_chat(tmp_path / "lighthouse_trip", LIGHTHOUSE), embedder)
    answers = iter([False])  # Jonas's messages are saved, then the import is cancelled before embedding
    with pytest.raises(Cancelled):
        import_chat(conn, write_chat(tmp_path, JONAS, "WhatsApp Chat with Jonas.txt"), embedder,
                    cancel=lambda: next(answers, True))
    jonas_windows = conn.execute("SELECT count(*) FROM chunk_windows").fetchone()[0] - trip.windows_added

    found = ChatRetriever(conn, embedder).retrieve("What is the rent, and are bills included?", k=3)
    assert found.unindexed == jonas_windows > 0
    assert found.matches and all(m.chat_title == "Lighthouse trip" for m in found.matches)  # the trip still answers
    assert ChatRetriever(conn, embedder).retrieve("kayak", min_score=1.01).unindexed == jonas_windows

    assert reindex(conn, embedder) == jonas_windows
    found = ChatRetriever(conn, embedder).retrieve("What is the rent, and are bills included?", k=3)
    assert found.unindexed == 0 and "950 a month" in found.matches[0].text
    conn.close()


def test_min_score_keeps_only_passages_at_least_that_similar(library):
    everything = retrieve(library, "ferry", k=20)
    best, second = sorted({m.similarity for m in everything.matches}, reverse=True)[:2]
    threshold = (best + second) / 2
    kept = retrieve(library, "ferry", k=20, min_score=threshold)
    assert [m.chunk_id for m in kept.matches] == [m.chunk_id for m in everything.matches if m.similarity >= threshold]
    assert len(kept.matches) == 1 and kept.matches[0].similarity == best
    nothing = retrieve(library, "ferry", k=20, min_score=1.01)
    assert nothing.matches == [] and nothing.describe() == "No passages found." and nothing.unindexed == 0


# How people end a question in a chat: an emoji or a second mark after it ("Had jij hem in 1? 😂" was
# highlighted as the answer on dutch_friends), a full-width mark.
@pytest.mark.parametrize("ending", ["?", "? 😂", "?!", "??🙏", "\uff1f"])
def test_the_answering_message_is_named_not_the_question_asked_in_the_chat(store, tmp_path, ending):
    """The message asked in the chat is nearest to the question; the reply after it is what answers."""
    from gallery_app.core.chat.evidence import closest_message

    export = write_chat(tmp_path / "helpdesk", [
        f"1/18/18, 12:12 - Anggi: Is the campus dormitory free for scholarship students{ending}",
        "1/18/18, 12:14 - SMB Telkom: The dormitory is free for scholarship students",
        "1/18/18, 12:16 - Anggi: Thank you very much",
        "1/18/18, 12:17 - SMB Telkom: You are welcome",
    ])
    import_chat(store, export, EMBEDDER)
    question = "Is the campus dormitory free for scholarship students?"
    best = ChatRetriever(store, EMBEDDER).retrieve(question, k=1).matches[0]
    answer = closest_message(store, best, question)
    assert answer.sender == "SMB Telkom" and answer.text == "The dormitory is free for scholarship students"
    assert best.answer_message_id == answer.message_id


def _parking_chat(tmp_path):
    """One day whose four messages each share a word with the question, one whose single message answers it."""
    chatter = [f"{day}/3/24, 10:0{n} - {who}: {text}" for day in (15, 16, 17, 18)
               for n, (who, text) in enumerate([("Bob", "lunch at noon"), ("Cat", "pizza again"),
                                                ("Dan", "the cheese one"), ("Bob", "fine by me")])]
    return write_chat(tmp_path / "parking", [
        "14/3/24, 09:00 - Anna: such a blue sky today",
        "14/3/24, 09:01 - Bob: the van is huge",
        "14/3/24, 09:02 - Cat: the park looks nice",
        "14/3/24, 09:03 - Dan: yesterday was fun",
        *chatter,
        "19/3/24, 18:00 - Anna: I left the blue van by the park gate yesterday",
        "19/3/24, 18:01 - Bob: lunch pizza",
        "19/3/24, 18:02 - Cat: more cheese please",
        "19/3/24, 18:03 - Dan: noon works",
    ])


def test_the_second_look_lifts_the_passage_whose_one_message_answers(store, tmp_path, monkeypatch):
    from gallery_app.core.chat import retrieval

    import_chat(store, _parking_chat(tmp_path), EMBEDDER)
    question = "Where is the blue van by the park yesterday?"
    plain = ChatRetriever(store, EMBEDDER).retrieve(question, k=6)
    assert plain.matches[0].day == "2024-03-14"  # the window of four loose words wins on its own
    monkeypatch.setattr(retrieval, "RERANK_DEPTH", 10)
    monkeypatch.setattr(retrieval, "RERANK_WEIGHT", 1.0)
    second_look = ChatRetriever(store, EMBEDDER).retrieve(question, k=6)
    assert second_look.matches[0].day == "2024-03-19"
    assert "I left the blue van by the park gate yesterday" in second_look.matches[0].excerpt
    assert {m.chunk_id for m in second_look.matches} == {m.chunk_id for m in plain.matches}


def test_the_second_look_reorders_only_the_passages_it_looked_at(library, monkeypatch):
    from gallery_app.core.chat import retrieval

    question = "Who is bringing the inflatable kayak?"
    plain = retrieve(library, question, k=20)
    monkeypatch.setattr(retrieval, "RERANK_DEPTH", 3)
    second_look = retrieve(library, question, k=20)
    assert {m.chunk_id for m in second_look.matches[:3]} == {m.chunk_id for m in plain.matches[:3]}
    assert [m.chunk_id for m in second_look.matches[3:]] == [m.chunk_id for m in plain.matches[3:]]


def test_a_reply_that_opens_a_day_is_found_by_the_question_it_answers(tmp_path):
    """The helpdesk answers two days later ("Sekitar 8ribu an"): only the question says what the reply is about."""
    chat = ["07/02/2018, 15:26 - SMB Telkom: Silakan akses smb.telkomuniversity.ac.id",
            "07/02/2018, 15:33 - Nadya: Untuk siswa baru yang diterima pertahun berapa kak?",
            "09/02/2018, 14:30 - SMB Telkom: Sekitar 8ribu an",
            "09/02/2018, 14:49 - Nadya: Makasih kak"]
    found = {}
    for lead_in in (False, True):
        folder = tmp_path / str(lead_in)
        conn = open_store(folder / "gallery.db")
        import_chat(conn, write_chat(folder, chat), EMBEDDER, config=ChunkingConfig(lead_in=lead_in))
        found[lead_in] = ChatRetriever(conn, EMBEDDER).retrieve("siswa baru diterima pertahun", k=2)
        conn.close()
    reply = {lead_in: next(m for m in found[lead_in].matches if m.day == "2018-02-09") for lead_in in found}
    assert reply[False].similarity < 0.1 < 0.3 < reply[True].similarity  # alone, the reply shares no word asked
    assert "SMB Telkom: Sekitar 8ribu an" in reply[True].text
    assert "siswa" not in reply[True].text  # the question is read with the reply, not shown in its passage


def test_a_window_of_scores_only_answers_with_its_passages_message(tmp_path):
    """Found for the remark read before it, a window of four game scores has nothing to highlight: the
    passage's message that answers is highlighted and read instead (seen in the window on dutch_friends)."""
    chat = ["23/01/2022, 08:00 - Vicky: coffee machine broken",
            "23/01/2022, 08:01 - Iris: Woordle 222 4/6",
            "23/01/2022, 08:02 - Frans: Woordle 222 X/6",
            "23/01/2022, 08:03 - Rens: the palindrome puzzle",
            "23/01/2022, 08:04 - Iris: Primel 22 3/6",
            "23/01/2022, 08:05 - Frans: Primel 22 5/6",
            "23/01/2022, 08:06 - Vicky: Primel 22 4/6",
            "23/01/2022, 08:07 - Iris: Primel 22 2/6"]
    # The window of Primel scores, led in by Rens's remark, shares the most words with the question.
    best, texts = _best_match(tmp_path, chat, "the Primel palindrome puzzle")
    assert texts[best.answer_message_id] == "the palindrome puzzle"
    assert best.focus_message_ids == [best.answer_message_id] and "Rens: the palindrome puzzle" in best.excerpt
    assert len(best.message_ids) == 8  # one passage: the remark is in it, before the window of scores


def _best_match(tmp_path, chat: list[str], question: str):
    """The best match for ``question`` in ``chat`` (export lines) imported alone, and its messages' texts by id."""
    conn = open_store(tmp_path / "gallery.db")
    try:
        import_chat(conn, write_chat(tmp_path, chat), EMBEDDER)
        (best,) = ChatRetriever(conn, EMBEDDER).retrieve(question, k=1).matches
        return best, {m.id: m.text for m in messages_by_id(conn, best.message_ids)}
    finally:
        conn.close()


def test_the_reply_beside_the_window_found_is_the_answering_message(tmp_path):
    """The window of four that shares most with the question can be the chatter after the reply that answers
    (spanish_students: "Google docs igual / Y google sheets / tmbn" after dam's "latex"). The answering message
    is chosen from the whole passage, and the card shows it with the window that was found."""
    chat = ["18/03/2021, 20:20 - Ana: morning all",
            "18/03/2021, 20:21 - Bob: coffee anyone",
            "18/03/2021, 20:22 - Cat: later maybe",
            "18/03/2021, 20:26 - Dam: use latex for documents instead of word",
            "18/03/2021, 20:27 - Santi: google docs push",
            "18/03/2021, 20:27 - Santi: word again",
            "18/03/2021, 20:28 - Fer: did push",
            "18/03/2021, 20:28 - Bob: documents"]
    best, texts = _best_match(tmp_path, chat, "what did people push for documents instead of word")
    window = [texts[i] for i in best.focus_message_ids if i != best.answer_message_id]
    assert texts[best.answer_message_id] == "use latex for documents instead of word"
    assert window == ["google docs push", "word again", "did push", "documents"]  # the window found, shown too
    assert best.excerpt.split("\n")[0] == "Cat: later maybe"  # from the message before the answer on


def test_a_broadcast_pasted_again_is_found_once(tmp_path):
    """nigerian_admissions pastes the same notices again and again: each copy was a card of its own, taking the
    place of a different passage (and of one the second reading could have read)."""
    notice = ("Screening registration for all full time ND applicants is now open on the school portal and closes "
              "on the last day of August; bring your JAMB result slip, two passport photographs with a red "
              "background and the printed acknowledgement page to the hall on the day of the screening exercise")
    chat = []
    for day, sender in enumerate(["Kef", "Jeff", "Stephen"], start=1):
        chat += [f"0{day}/08/2018, 09:00 - {sender}: {notice}",
                 f"0{day}/08/2018, 09:05 - Ada: thanks, noted",
                 f"0{day}/08/2018, 12:00 - Bisi: who is going to the match tonight"]
    chat += ["05/08/2018, 10:00 - Ada: the screening hall is the one near the main gate, red building",
             "05/08/2018, 10:01 - Bisi: ok"]
    conn = open_store(tmp_path / "gallery.db")
    import_chat(conn, write_chat(tmp_path, chat), EMBEDDER, config=ChunkingConfig(lead_in=False))
    matches = ChatRetriever(conn, EMBEDDER).retrieve("screening passport photographs red background", k=3).matches
    conn.close()
    assert sum(notice in match.text for match in matches) == 1
    assert "Ada: the screening hall is the one near the main gate, red building" in matches[1].text


def _ask_small_chat(tmp_path, chat: list[str], questions: list[str]):
    """Each question's retrieval (six passages) in ``chat`` (export lines) imported alone, without lead-ins."""
    conn = open_store(tmp_path / "gallery.db")
    try:
        import_chat(conn, write_chat(tmp_path, chat), EMBEDDER, config=ChunkingConfig(lead_in=False))
        retriever = ChatRetriever(conn, EMBEDDER)
        return [retriever.retrieve(question, k=6) for question in questions]
    finally:
        conn.close()


def test_a_year_named_alone_lifts_that_year_s_passages_less_than_a_month(tmp_path):
    """"…in 2016?" on a chat of two Novembers: the 2016 passage comes first although the 2017 one shares one more of
    the question's words; a year says less about a passage than a month does, so it lifts less."""
    chat = ["20/11/2016, 14:33 - Rahul: Thanksgiving holiday at my cousins house",
            "21/11/2016, 18:00 - Udit: squash tomorrow",
            "03/02/2017, 10:00 - Sunil: exams are over",
            "17/11/2017, 10:35 - Rahul: Thanksgiving holiday, I spend it at my friends house",
            "20/11/2017, 09:00 - Udit: new phone cover",
            "02/01/2018, 12:00 - Akshay: happy new year"]
    question = "Where did Rahul spend the Thanksgiving holiday"
    undated, in_year, in_month = _ask_small_chat(tmp_path, chat, [f"{question}?", f"{question} in 2016?",
                                                                  f"{question} in November 2016?"])

    def score_of(found, day: str) -> float:
        return next(m.score for m in found.matches if m.day == day)

    assert undated.matches[0].day == "2017-11-17"
    assert in_year.matches[0].day == "2016-11-20"
    assert in_year.spans == [DaySpan(date(2016, 1, 1), date(2016, 12, 31))]
    assert score_of(in_month, "2016-11-20") > score_of(in_year, "2016-11-20") > score_of(undated, "2016-11-20")


@pytest.mark.parametrize("lift", [0.0, 0.5])
def test_a_question_for_an_amount_prefers_the_passage_that_says_a_number(tmp_path, monkeypatch, lift):
    """"How much…" is answered by the message with the price, though the one about selling the car shares more of
    the question's words; a question that asks no amount keeps the embedder's order."""
    from gallery_app.core.chat import retrieval as retrieval_module

    monkeypatch.setattr(retrieval_module, "AMOUNT_LIFT", lift)
    chat = ["27/12/2016, 21:48 - Rahul: Porsche on sale, all black, 150000 Dhs",
            "28/12/2016, 10:00 - Udit: squash tomorrow",
            "03/02/2017, 10:00 - Sunil: exams are over",
            "21/12/2017, 08:28 - Rahul: I sold the Porsche, did you ask about it?",
            "22/12/2017, 09:00 - Udit: new phone cover",
            "02/01/2018, 12:00 - Akshay: happy new year"]
    how_much, sold = _ask_small_chat(tmp_path, chat, ["How much did Rahul ask for the Porsche on sale?",
                                                      "Did Rahul sell the Porsche?"])
    assert how_much.matches[0].day == ("2016-12-27" if lift else "2017-12-21")
    assert sold.matches[0].day == "2017-12-21"
