"""Evidence first: answers cite their passages, the best window's lines are known, a decline shows the closest message."""

from __future__ import annotations

from datetime import datetime

import pytest

from gallery_app.core.chat.ask_options import AskOptions
from gallery_app.core.chat.chunking import carries_words, is_question, is_score_line
from gallery_app.core.chat.citations import citations, cited_numbers, strip_markers
from gallery_app.core.chat.events import UNSUPPORTED, Answer, AnswerPiece, MatchesFound
from gallery_app.core.chat.evidence import closest_message, passage_lines
from gallery_app.core.chat.importer import import_chat
from gallery_app.core.chat.messages import MessageKind
from gallery_app.core.chat.prompting import passage_heading
from gallery_app.core.chat.repository import StoredMessage
from gallery_app.core.chat.session import ChatSession
from tests.chat_helpers import HashEmbedder, ScriptedLLM


# --- citations -------------------------------------------------------------------------------------
@pytest.mark.parametrize("text,count,numbers", [
    ("Daniel paid [1].", 3, [1]),
    ("Daniel [2][1] and [3, 1].", 3, [2, 1, 3]),
    ("[4] is not given, [2] is", 3, [2]),
    ("In [2024] they went", 3, []),
    ("No citation", 3, []),
])
def test_cited_numbers(text, count, numbers):
    assert cited_numbers(text, count) == numbers


def test_markers_are_stripped_with_their_space():
    assert strip_markers("Daniel paid [1]. Maya booked [2, 3]") == "Daniel paid. Maya booked"


def test_without_markers_the_passages_sharing_the_answers_words_are_cited_else_the_top_one():
    passages = ["Maya: see you at the station", "Daniel: I put the room on my card"]
    assert citations("Daniel put it on his card.", passages) == [2]
    assert citations("Nothing in common.", passages) == [1]
    assert citations("It was [2].", passages) == [2]
    # Names in every passage do not tell them apart.
    assert citations("Maya.", ["Maya: hi", "Maya: the room", "Maya: ok"]) == [1]
    assert citations("Maya had the room.", ["Maya: hi", "Maya: the room", "Maya: ok"]) == [2]


def test_an_answer_in_another_script_cites_the_passage_holding_its_words():
    """Before: words outside Latin script were folded away, so a Russian answer always cited the top passage."""
    passages = ["Маша: увидимся на вокзале", "Даниил: я оплатил номер своей картой"]
    assert citations("Даниил оплатил номер картой.", passages) == [2]


def test_a_cited_passage_that_does_not_hold_the_answers_words_gives_way_to_the_one_that_does():
    # Seen in the window: "Daniel ended up paying for the hotel [6]", [6] a phone-battery conversation.
    passages = ["Daniel: I put the hotel on my card", "Maya: see you", "Gill: my phone battery died again"]
    assert citations("Daniel paid for the hotel [3].", passages) == [1]
    assert citations("Daniel paid for the hotel [3][1].", passages) == [1]
    # A citation the words cannot judge stands.
    assert citations("Yes [2].", passages) == [2]


def test_game_scores_grids_reactions_and_placeholders_are_never_the_answer():
    assert is_score_line("Woordle 218 3/6") and is_score_line("#Heardle #123") and is_score_line("Primel 22 X/6")
    assert not is_score_line("I paid 3/4 of the room") and not is_score_line("We meet at 10/12 in the hall room")
    for text in ["Wordle 219 6/6\n⬛🟨⬛⬛⬛\n🟩🟩🟩🟩🟩", "😂😂", "<Media omitted>", "This message was deleted",
                 "Letterle 26/26\n⬜\n⬜\n https://edjefferson.com/letterle/",
                 # highlighted as the answer on dutch_friends before:
                 "#Worldle #42 6/6 (100%) 🙈\n🟩🟩🟩⬛⬛➡️\n🟩🟩🟩🟩🟩🎉"]:
        assert not carries_words(text), text
    for text in ["Klopt", "Jacuzzi's", "Wordle 219 6/6\nwas lastig vandaag", "https://jamb.gov.ng/register",
                 "100% agree 👍"]:
        assert carries_words(text), text


def test_a_shared_game_result_is_never_the_answer_whatever_its_header_says():
    # Highlighted as the answer on dutch_friends before: a header without a score ("11m 41s", a date and
    # "5 words / 26 letters"), a grid, a link with a hashtag.
    for text in ["Daily Crosswordle 45: 11m 41s https://crosswordle.vercel.app/?daily=1\n\n⬜⬜⬜⬜⬜\n⬜⬜⬜⬜⬜\n⬜🟨⬜🟨",
                 "Diffle 2022-3-11\n5 words / 26 letters\n\n⚪🟡🟢🟢⚪⚪⚪⚪\n⚪🟢🟢🟢⚪\n🟢🟢🟢\n\nhttps://hedalu244.github.io/diffle/",
                 "I won Daily Squardle #43 with 5 guesses to spare!\nBoard after 3 guesses:\n⬜🟧🟧⬛🟧\n🟥🔳🟥🔳🟥\n"
                 "https://fubargames.se/squardle/",
                 "nerdlegame 28 4/6\n\n🟪⬛⬛🟩🟪⬛⬛⬛\n🟩🟩🟩🟩🟩🟩🟩🟩\n\nhttps://nerdlegame.com #nerdle",
                 # Polydle's tries under its header, without a grid (highlighted as the answer on dutch_friends):
                 "Daily 4-dle #0015\n7 : 3&6&4&7\npolydle.github.io/?classic/daily/4",
                 "Daily 5-dle #0006\n9 : 8&9&3&7&6\npolydle.github.io/?5\n\n⬜⬜⬜⬜⬜\n⬜⬜⬜🟨⬜"]:
        assert not carries_words(text), text
    # What the person wrote after the grid is theirs; symbols framing a notice are no grid.
    for text in ["Not Wordle 26 4/6\n\n⬜🟨🟩🟩⬜\n🟩🟩🟩🟩🟩\nNieuw woord geleerd",
                 "nerdlegame 38 2/6\n\n⬛⬛🟪⬛🟩🟩🟩🟩\n🟩🟩🟩🟩🟩🟩🟩🟩\n\nhttps://nerdlegame.com #nerdle\n\n\nKobe",
                 "🟣🟣🟣\n*REMINDER*\nPhotoshoot hai aaj 4:15 se sab log 4:00 tak aajana\n🟣🟣🟣",
                 # A time or an amount alone is an answer when no game's result is shared with it.
                 "15:30", "€ 12,50"]:
        assert carries_words(text), text


def test_a_message_that_ends_by_asking_is_a_question_whatever_follows_its_mark():
    for text in ["how much?", "Had jij hem in 1? 😂", "Really?!", "apa ya kak?🙏", "¿Cuánto es？", "?"]:
        assert is_question(text), text
    for text in ["Klopt", "ok :)", "is it 5? no, 6", "https://example.org/form?id=3", "😂", ""]:
        assert not is_question(text), text


# --- which lines are the best window ---------------------------------------------------------------
def _message(message_id: int, sender: str, text: str) -> StoredMessage:
    return StoredMessage(message_id, 1, datetime(2024, 6, 4, 9, message_id), sender, text, MessageKind.TEXT, None, None)


def test_lines_map_to_their_messages_also_when_split_repeated_or_prefixed():
    messages = [_message(1, "Maya", "ok, see you"), _message(2, "Maya", "ok"),
                _message(3, "Daniel", "First sentence here. Second  sentence\nthird line"), _message(4, "Maya", "ok")]
    text = ("2024-06-04\nMaya: ok, see you\nMaya: ok\nDaniel: First sentence here.\nDaniel: Second sentence\n"
            "Daniel: third line\nMaya: ok")
    lines = passage_lines(text, messages, focus_ids=[3])
    assert [line.message_id for line in lines] == [None, 1, 2, 3, 3, 3, 4]
    assert [line.text for line in lines if line.focus] == ["Daniel: First sentence here.", "Daniel: Second sentence",
                                                           "Daniel: third line"]
    # An excerpt starts inside the passage: "ok" is not the start of "ok, see you".
    assert [line.message_id for line in passage_lines("Maya: ok\nDaniel: First sentence here.", messages)] == [2, 3]


def test_a_passage_of_game_results_only_highlights_the_one_chosen():
    # dutch_friends, 8 February: cited by the answer, the card highlighted nothing (every line a score).
    messages = [_message(1, "Iris", "Woordle 234 4/6\n\n⬛⬛⬛⬛⬛\n🟩🟩🟩🟩🟩"), _message(2, "Rens", "Woordle 234 2/6\n\n⬛🟩🟨⬛⬛\n🟩🟩🟩🟩🟩"),
               _message(3, "Iris", "Vardle 11 3/8\n\n⚪\n🟢\n\nhttps://vardle.netlify.app/")]
    text = "Iris: Woordle 234 4/6\nRens: Woordle 234 2/6\nIris: Vardle 11 3/8\nIris: https://vardle.netlify.app/"
    lines = passage_lines(text, messages, focus_ids=[2])
    assert [line.text for line in lines if line.focus] == ["Rens: Woordle 234 2/6"]
    # Beside a remark, a score is never highlighted.
    messages.append(_message(4, "Rens", "Makkelijke vandaag"))
    lines = passage_lines(text + "\nRens: Makkelijke vandaag", messages, focus_ids=[2, 4])
    assert [line.text for line in lines if line.focus] == ["Rens: Makkelijke vandaag"]


# --- the session: a continuation is replaced by the decline and the closest message ------------------
CHAT = """04/06/2024, 09:30 - Maya: Did you sort out the hotel?
04/06/2024, 09:36 - Daniel: I put the room on my card, we can sort it out later
04/06/2024, 09:40 - Maya: Thanks! The cottage came to 340 for two nights
05/06/2024, 18:00 - Maya: Shall we bring the board games?
05/06/2024, 18:05 - Daniel: Yes, and the cards
"""


@pytest.fixture
def chat_store(store, tmp_path):
    export = tmp_path / "_chat.txt"
    export.write_text(CHAT, "utf-8")
    embedder = HashEmbedder()
    import_chat(store, export, embedder)
    return store, embedder


def _ask(chat_store, pieces, question="Who put the room on the card?"):
    store, embedder = chat_store
    session = ChatSession(store, embedder, ScriptedLLM(pieces), AskOptions(passages=2))
    events = list(session.ask(question))
    assert isinstance(events[0], MatchesFound) and isinstance(events[-1], Answer)
    return session, [e.text for e in events if isinstance(e, AnswerPiece)], events[-1]


@pytest.mark.parametrize("pieces", [
    ["Sophia", " H.:", " Ich", " werd", "…"],
    ["Maya", ": Thanks", "!"],
    ["[04/06/2024, ", "09:37]", " Daniel: ok"],
    ["<Media", " omitted>"],
    ["\u200eimage", " omitted"],
])
def test_a_chat_log_continuation_becomes_the_decline_and_the_closest_message(chat_store, pieces):
    session, streamed, answer = _ask(chat_store, pieces)
    assert answer.declined and not answer.knows
    assert answer.text == (f"{UNSUPPORTED}\n"
                           "Closest message: Daniel, 04 Jun 2024: I put the room on my card, we can sort it out later")
    assert answer.closest.message_id in answer.retrieval.matches[0].focus_message_ids  # the best window's message
    assert answer.raw_text == "".join(pieces).strip()  # what the model wrote is kept
    assert not streamed  # none of it reached the person, not even while it was being written
    assert answer.grounding.chat_log
    assert session.conversation.turns[-1].answer == UNSUPPORTED


def test_a_passage_heading_given_as_the_answer_becomes_the_decline_and_the_closest_message(chat_store):
    """Before: "The passage you used is: [1] Weekend away, 2024-06-10" (SmolLM2 on the demo chat) was the answer."""
    *_, first = _ask(chat_store, ["I don't know."])
    heading = passage_heading(first.prompt.matches[0])
    _session, _streamed, answer = _ask(chat_store, ["The passage you used is:\n", f"[1] {heading}"])
    assert answer.declined and answer.grounding.says_nothing
    assert answer.text.startswith(UNSUPPORTED) and "Closest message: Daniel, 04 Jun 2024" in answer.text


def test_the_models_own_dont_know_also_gets_the_closest_message(chat_store):
    _session, _streamed, answer = _ask(chat_store, ["I don't", " know."])
    assert answer.declined and answer.text.startswith(UNSUPPORTED) and "Closest message: Daniel, 04 Jun 2024" in answer.text


def test_a_cited_answer_streams_and_records_its_citation(chat_store):
    session, streamed, answer = _ask(chat_store, ["Daniel", " put it on", " his card", " [1]."])
    assert not answer.declined and answer.knows and answer.closest is None
    assert "".join(streamed) == "Daniel put it on his card [1]." == answer.text
    assert answer.citations == [1] and answer.cited_matches == [answer.prompt.matches[0]]
    assert "[1] " in answer.prompt.context and "[2] " in answer.prompt.context  # the prompt numbers its passages
    assert session.conversation.turns[-1].answer == "Daniel put it on his card."  # replayed without the marker


def test_an_answer_without_markers_cites_the_passage_it_shares_words_with(chat_store):
    _session, _streamed, answer = _ask(chat_store, ["Daniel", " put the room on his card."])
    numbers = answer.citations
    assert len(numbers) == 1 and "I put the room on my card" in answer.prompt.matches[numbers[0] - 1].text


def test_a_passage_number_is_not_evidence_for_a_number(chat_store):
    _session, _streamed, answer = _ask(chat_store, ["2", " nights."], "How long did they stay?")
    assert answer.declined and answer.grounding.unsupported == ["2"]


def test_closest_message_prefers_the_focus_message_sharing_the_questions_words(chat_store):
    store, embedder = chat_store
    session = ChatSession(store, embedder, None, AskOptions(passages=2))
    match = session.retriever.retrieve("cottage price two nights", k=1).matches[0]
    closest = closest_message(store, match, "How much was the cottage for two nights?")
    assert closest.sender == "Maya" and closest.text.startswith("Thanks! The cottage")
    assert closest.describe() == "Closest message: Maya, 04 Jun 2024: Thanks! The cottage came to 340 for two nights"


# --- the same evidence on the command line ------------------------------------------------------------
def test_cli_marks_the_best_windows_lines_and_prints_sources_or_the_closest_message(chat_store, capsys):
    from gallery_app.cli_chat import FOCUS_MARK, _ask as cli_ask

    store, embedder = chat_store
    cli_ask(ChatSession(store, embedder, ScriptedLLM(["Daniel", " did [1]."]), AskOptions(passages=2)), "Who put the room on the card?",
            False)
    out = capsys.readouterr().out
    marked = [line.strip() for line in out.splitlines() if line.strip().startswith(FOCUS_MARK)]
    assert marked and all(": " in line for line in marked)
    assert "Daniel did [1].\nSources: [1] " in out

    cli_ask(ChatSession(store, embedder, ScriptedLLM(["Philip P.:", " 10€"]), AskOptions(passages=2)), "Who put the room on the card?",
            False)
    out = capsys.readouterr().out
    assert "Philip" not in out
    assert f"{UNSUPPORTED}\nClosest message: Daniel, 04 Jun 2024: I put the room on my card" in out
