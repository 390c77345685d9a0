"""A person's session in the real window on a real chat (issue 22): the app's default offline models (the
multilingual embedder and the small chat LLM), the demo chats loaded at start, then
../shared/fixtures/chat_qa/dutch_friends imported as a drop does it. Three questions about two chats and a
follow-up, each citation opened: the passages, the highlight, the answer or decline, and where the viewer
opens are what a person would check."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings, Qt
from pytestqt.exceptions import TimeoutError

from gallery_app.core.chat.chunking import carries_words
from gallery_app.core.chat.events import Answer
from gallery_app.ui.chat.pane import CLOSEST_NOTE, PASSAGE_NOTE
from gallery_app.ui.chat.viewer import ChatViewer
from gallery_app.ui.main_window import MODELS_OFFERED_KEY, MainWindow
from gallery_app.ui.services import Services
from gallery_app.ui.settings import Settings
from tests.conftest import SHARED_FIXTURES
from tests.gui.test_chat_pane import ask_and_record, turns, wait_idle
from tests.gui.test_chat_evidence import card_lines
from tests.gui.test_real_chat_window import WORD_GAME

pytestmark = [pytest.mark.shared_fixtures, pytest.mark.slow]

LONG = 180_000
DUTCH = SHARED_FIXTURES / "chat_qa" / "dutch_friends.txt"


def in_view(viewer: ChatViewer, message_id: int) -> bool:
    """The message's row is laid out, inside the visible part of the list, and the current row."""
    row = viewer.model.row_of_message(message_id)
    index = viewer.model.index(row)
    rect = viewer.view.visualRect(index)
    return (row >= 0 and rect.isValid() and viewer.view.viewport().rect().intersects(rect)
            and viewer.view.currentIndex().row() == row)


def open_and_check(window: MainWindow, qtbot, open_it, message_id: int, note: str) -> None:
    """Opens a viewer with ``open_it`` and waits until ``message_id`` is shown, highlighted and in view."""
    chat = window.chat_pane
    with qtbot.waitSignal(chat.viewer_opened, timeout=10_000) as opened:
        open_it()
    viewer = opened.args[0]
    qtbot.waitUntil(lambda: viewer.is_loaded, timeout=30_000)
    qtbot.waitUntil(lambda: in_view(viewer, message_id), timeout=10_000)
    assert viewer.model.row_of_message(message_id) in viewer.model.highlighted_rows()
    assert note in viewer.header.text(), viewer.header.text()  # says what the highlight is
    viewer.close()


def asked(window: MainWindow, qtbot, question: str):
    """``ask_and_record``, and on a timeout what the answer bubble showed (to tell slow from stuck)."""
    chat = window.chat_pane
    try:
        return ask_and_record(chat, qtbot, question, LONG)
    except TimeoutError as timeout:
        answer = turns(chat, "answer")[-1]
        raise AssertionError(f"{question!r} not finished: status {answer.status.text()!r}, answer so far "
                             f"{answer.streamed_text()!r}, {len(turns(chat, 'passages'))} passages turns") from timeout


def check_turn(window: MainWindow, qtbot, events) -> Answer:
    """The passages came before the answer; the top card highlights a line that says something; the answer
    is a cited sentence or the plain decline with its closest message; each citation opens the chat there."""
    names = [name for name, _shown, _event in events]
    assert names.index("MatchesFound") < names.index("Answer")
    answer = events[-1][2]
    assert isinstance(answer, Answer) and answer.text
    card = turns(window.chat_pane, "passages")[-1].cards[0]
    highlighted, _ = card_lines(card)
    assert highlighted and all(carries_words(line.split(": ", 1)[-1]) for line in highlighted), highlighted
    answer_turn = turns(window.chat_pane, "answer")[-1]
    if answer.declined:
        assert answer.closest is not None and "Closest message" in answer_turn.label.text()
        open_and_check(window, qtbot, lambda: answer_turn._link("closest"), answer.closest.message_id, CLOSEST_NOTE)
    else:
        assert answer.citations and len(answer_turn.sources) == len(answer.citations)
        for number, match in zip(answer.citations, answer.cited_matches):
            shown = window.chat_pane._card_highlight(match)
            cards = [c for t in turns(window.chat_pane, "passages") for c in t.cards if c.match.key == match.key]
            debug = [(l.text[:60], l.message_id, l.focus) for l in cards[-1].all_lines] if cards else None
            assert len(shown) == 1, (shown, match.answer_message_id, match.focus_message_ids, debug)  # the one answering message of the cited passage
            open_and_check(window, qtbot, lambda n=number: answer_turn._link(f"cite:{n}"), shown[0], PASSAGE_NOTE)
    return answer


def test_a_real_chat_in_the_real_window(qtbot):
    if not DUTCH.exists():
        pytest.skip("needs ../shared/fixtures/chat_qa")  # the shared_fixtures mark says why (and fails in CI)
    QSettings().setValue(MODELS_OFFERED_KEY, True)
    window = MainWindow(Services(Settings()))
    qtbot.addWidget(window)
    with qtbot.waitSignal(window.demo_ready, timeout=LONG):
        window.show()
    chat = window.chat_pane
    try:
        window.open_paths([DUTCH])  # what dropping the file on the window does
        qtbot.waitUntil(lambda: chat.chat_model.rowCount() == 3, timeout=LONG)
        wait_idle(chat, qtbot, LONG)
        imported = turns(chat, "note")[-1].text()
        listed = [chat.chat_model.index(row).data(Qt.ItemDataRole.ToolTipRole) or chat.chat_model.index(row).data()
                  for row in range(chat.chat_model.rowCount())]
        # The summary counts the messages as the chat list does (WhatsApp's notices apart).
        assert "1,550 messages" in imported and any("1,550 messages" in str(item) for item in listed), \
            (imported, listed)

        check_turn(window, qtbot, asked(window, qtbot, "Who ended up paying for the hotel?"))
        check_turn(window, qtbot, asked(window, qtbot, WORD_GAME))
        assert "searched for" not in turns(chat, "passages")[-1].heading.text()
        puzzle = "What was the solution of the eight-letter word puzzle on 25 January?"
        check_turn(window, qtbot, asked(window, qtbot, puzzle))
        check_turn(window, qtbot, asked(window, qtbot, "And who got it right?"))
        follow_up = turns(chat, "passages")[-1]
        assert "searched for" in follow_up.heading.text()
        assert any("Jacuzzi" in card.match.text for card in follow_up.cards[:3])
    finally:
        wait_idle(chat, qtbot, LONG)
        window.close()
