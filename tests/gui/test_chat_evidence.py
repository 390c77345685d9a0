"""Evidence in the window: the best window highlighted in each passage card, citations that open the
chat, and a decline that says so and shows the closest message. Stand-in models keep it quick and exact."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QTextDocumentFragment

from gallery_app.core.chat.chunking import message_lines
from gallery_app.core.chat.events import UNSUPPORTED, AnswerPiece
from gallery_app.core.chat.evidence import PassageLine, answering_ids
from gallery_app.core.chat.repository import messages_by_id
from gallery_app.core.chat.retrieval import ANSWER_MESSAGE_PASSAGES, Match
from gallery_app.core.store import open_store
from gallery_app.ui.chat import ChatPane
from gallery_app.ui.chat.conversation import FOCUS_STYLE, AnswerTurn, PassageCard
from gallery_app.ui.chat.viewer import MessageIdRole
from gallery_app.ui.services import Services
from gallery_app.ui.settings import Settings
from tests.chat_helpers import DEMO_CHAT, HashEmbedder, ScriptedLLM

QUESTION = "Who put the room on the card?"


def stand_in_services(llm: ScriptedLLM) -> Services:
    """The window's services with a word-hashing embedder and an LLM that writes what it is told."""
    services = Services(Settings(passages=3))
    embedder = HashEmbedder()
    # On the instance: PySide resolves some methods of a Python subclass of a QObject subclass to QObject's own.
    services.text_embedder = lambda: embedder
    services.chat_llm = lambda: llm
    services.loaded = lambda role: True
    # The second reading's real model would read word-hash rankings again; its window test is below.
    services.second_reading = lambda: None
    return services


def wait_idle(pane: ChatPane, qtbot) -> None:
    qtbot.waitUntil(lambda: not pane.busy and pane.services.workers.active == 0, timeout=60_000)


def demo_pane(qtbot, pieces) -> ChatPane:
    pane = ChatPane(stand_in_services(ScriptedLLM(pieces)))
    qtbot.addWidget(pane)
    pane.resize(1000, 700)
    pane.show()
    wait_idle(pane, qtbot)  # the first read migrates the new database alone (see test_chat_pane.make_pane)
    pane.import_files([DEMO_CHAT])
    wait_idle(pane, qtbot)
    qtbot.waitUntil(lambda: pane.chat_model.rowCount() == 1, timeout=10_000)
    return pane


@pytest.fixture
def close_pane():
    panes = []
    yield panes.append
    for pane in panes:
        pane.stop()
        for viewer in list(pane.viewers):
            viewer.close()
        pane.services.workers.wait()
        pane.services.shutdown()


def ask(pane: ChatPane, qtbot) -> list[object]:
    seen: list[object] = []
    worker = pane.ask(QUESTION)
    worker.signals.yielded.connect(seen.append)
    wait_idle(pane, qtbot)
    return seen


def card_lines(card: PassageCard) -> tuple[list[str], list[str]]:
    """(highlighted, other) lines of the card as a person reads them."""
    highlighted, other = [], []
    for segment in card.lines.text().split("<br>"):
        text = QTextDocumentFragment.fromHtml(segment).toPlainText()
        (highlighted if FOCUS_STYLE in segment else other).append(text)
    return highlighted, other


def click_link(qtbot, label, text: str) -> None:
    """Clicks the start of ``label``'s text, where its link ``text`` is."""
    qtbot.waitUntil(lambda: label.isVisible() and label.height() >= label.fontMetrics().height(), timeout=5_000)
    rect = label.contentsRect()
    metrics = label.fontMetrics()
    qtbot.mouseClick(label, Qt.MouseButton.LeftButton,
                     pos=QPoint(rect.left() + metrics.horizontalAdvance(text) // 2, rect.top() + metrics.height() // 2))


def test_cards_highlight_exactly_the_answering_messages_and_a_citation_opens_the_chat(qtbot, close_pane):
    pane = demo_pane(qtbot, ["Daniel", " put it on", " his card", " [1]."])
    close_pane(pane)
    ask(pane, qtbot)

    passages = next(turn for turn in pane.view.turns if turn.kind == "passages")
    assert passages.cards
    conn = open_store()
    try:
        for number, card in enumerate(passages.cards):
            messages = messages_by_id(conn, card.match.message_ids)
            answering = answering_ids(card.match, messages)
            if number < ANSWER_MESSAGE_PASSAGES:  # the best passages name their one answering message
                assert answering == [card.match.answer_message_id]
            wanted = [line for m in messages_by_id(conn, answering) for line in message_lines(m.sender, m.text)]
            highlighted, other = card_lines(card)
            assert wanted and highlighted == wanted, (card.match.chunk_id, highlighted, wanted)
            assert not set(other) & set(wanted)
            assert card.highlighted_ids() == answering
    finally:
        conn.close()

    answer = next(turn for turn in pane.view.turns if isinstance(turn, AnswerTurn))
    assert answer.answer.citations == [1]
    assert 'href="cite:1"' in answer.label.text()  # the marker in the sentence is a link too
    cited = answer.answer.cited_matches[0]
    assert len(answer.sources) == 1 and "Weekend away" in answer.sources[0].text()
    with qtbot.waitSignal(pane.viewer_opened, timeout=5_000) as opened:
        click_link(qtbot, answer.sources[0], "[1]")
    viewer = opened.args[0]
    with qtbot.waitSignal(viewer.loaded, timeout=10_000):
        pass
    rows = viewer.model.highlighted_rows()
    card = next(card for card in passages.cards if card.match.chunk_id == cited.chunk_id)
    assert {viewer.model.index(r).data(MessageIdRole) for r in rows} == set(card.highlighted_ids())


def test_a_chat_log_continuation_is_shown_as_a_plain_decline_with_the_closest_message(qtbot, close_pane):
    pane = demo_pane(qtbot, ["Sophia", " H.:", " Ich", " werd", "…"])
    close_pane(pane)
    seen = ask(pane, qtbot)

    assert not [event for event in seen if isinstance(event, AnswerPiece)]  # nothing of it was ever on screen
    answer = next(turn for turn in pane.view.turns if isinstance(turn, AnswerTurn))
    shown = answer.label.text()
    closest = answer.answer.closest
    assert "Sophia" not in shown and shown.startswith(UNSUPPORTED)
    assert closest.message_id in answer.answer.retrieval.matches[0].focus_message_ids  # the top match's best window
    assert f"Closest message: <a href=\"closest\">{closest.heading}</a>: " in shown
    with qtbot.waitSignal(pane.viewer_opened, timeout=5_000) as opened:
        answer._link("closest")  # the link's position inside a wrapped sentence is the label's business
    viewer = opened.args[0]
    with qtbot.waitSignal(viewer.loaded, timeout=10_000):
        pass
    assert [viewer.model.index(r).data(MessageIdRole) for r in viewer.model.highlighted_rows()] == [closest.message_id]


@pytest.mark.parametrize("pieces", [
    ["The answer", " is:", " [1]"],  # SmolLM2 on the real chats: a lead-in, and no answer after it
    ["Who put", " the room", " on the", " cards?"],  # the question back, a word inflected
])
def test_an_answer_that_says_nothing_is_replaced_by_a_decline_with_the_closest_message(qtbot, close_pane, pieces):
    """Before: "The answer is: [1]" stood in the answer box as the answer, and so did a restated question
    whose words were inflected ("cards" for "card")."""
    pane = demo_pane(qtbot, pieces)
    close_pane(pane)
    ask(pane, qtbot)

    answer = next(turn for turn in pane.view.turns if isinstance(turn, AnswerTurn))
    shown = QTextDocumentFragment.fromHtml(answer.label.text()).toPlainText()
    assert answer.answer.declined and shown.startswith(UNSUPPORTED)
    assert "The answer is" not in shown and "Who put" not in shown
    assert f"Closest message: {answer.answer.closest.heading}: " in shown


def test_chat_text_on_a_card_is_text_not_markup(qtbot):
    text = "Ana: <b>not bold</b> & <a href='x'>no link</a>\nBen: ok"
    match = Match(1, 1, "<i>Trip</i>", "2024-05-01", ["Ana", "Ben"], text, [1, 2], 0.9, 0.9, [1], text)
    card = PassageCard(match)
    qtbot.addWidget(card)
    card.set_lines([PassageLine("Ana: <b>not bold</b> & <a href='x'>no link</a>", 1, True), PassageLine("Ben: ok", 2)])
    highlighted, other = card_lines(card)
    assert highlighted == ["Ana: <b>not bold</b> & <a href='x'>no link</a>"] and other == ["Ben: ok"]
    assert "&lt;i&gt;Trip" in card.heading.text()


def test_a_card_starts_just_above_a_best_window_further_down(qtbot):
    lines = [PassageLine(f"Ana: line {i}", i, i == 9) for i in range(12)]
    match = Match(1, 1, "Trip", "2024-05-01", ["Ana"], "\n".join(line.text for line in lines), list(range(12)),
                  0.9, 0.9, [9], "")
    card = PassageCard(match)
    qtbot.addWidget(card)
    card.set_lines(lines)
    highlighted, other = card_lines(card)
    assert highlighted == ["Ana: line 9"]
    assert other[0] == "… 6 earlier lines" and "Ana: line 8" in other and other[-1] == "Ana: line 11"


class _CrashedReader:
    def continuation_likelihoods(self, prompts, continuations):
        from gallery_app.core.models.runtimes.llama_process import crash_error

        raise crash_error(-11, "Gemma 3 270M")


def test_a_failed_second_reading_is_said_above_the_passages_that_are_still_shown(qtbot, close_pane):
    from gallery_app.core.chat.second_reading import SecondReading

    pane = demo_pane(qtbot, ["Daniel", " [1]."])
    close_pane(pane)
    reading = SecondReading(_CrashedReader())
    pane.services.second_reading = lambda: reading
    ask(pane, qtbot)
    passages = next(turn for turn in pane.view.turns if turn.kind == "passages")
    assert passages.cards
    assert "The second reading of the passages failed, so they are in the first search's order." in passages.heading.text()
