"""The chat pane with the real small offline models: import, passages first, streamed answers, stop, viewer."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from gallery_app.core.chat.events import Answer, AnswerPiece, MatchesFound
from gallery_app.ui.chat import ChatPane, ChatViewer
from gallery_app.ui.chat.chat_list import DetailsRole
from gallery_app.ui.chat.conversation import PassagesTurn
from gallery_app.ui.chat.viewer import HighlightedRole, MessageIdRole
from gallery_app.ui.services import Services
from gallery_app.ui.settings import Settings
from tests.chat_helpers import DEMO_CHAT

MINILM = "all-minilm-l6-v2-int8"
LONG = 90_000


def make_pane(qtbot, **settings) -> ChatPane:
    values = {"text_embedder": MINILM, "answer_tokens": 48, **settings}
    services = Services(Settings(**values))
    pane = ChatPane(services)
    qtbot.addWidget(pane)
    pane.resize(1000, 700)
    pane.show()
    return pane


def wait_idle(pane: ChatPane, qtbot, timeout: int = LONG) -> None:
    if pane.busy:
        with qtbot.waitSignal(pane.busy_changed, timeout=timeout, check_params_cb=lambda busy: not busy):
            pass
    qtbot.waitUntil(lambda: pane.services.workers.active == 0, timeout=timeout)


@pytest.fixture
def pane(qtbot):
    chat_pane = make_pane(qtbot)
    yield chat_pane
    chat_pane.stop()
    wait_idle(chat_pane, qtbot)
    for viewer in list(chat_pane.viewers):
        viewer.close()
    chat_pane.services.shutdown()


def import_demo(pane: ChatPane, qtbot) -> None:
    pane.import_files([DEMO_CHAT])
    wait_idle(pane, qtbot)
    shown = [turn.text() for turn in pane.view.turns]
    assert any("Imported “Weekend away”" in text for text in shown), shown
    qtbot.waitUntil(lambda: pane.chat_model.rowCount() == 1, timeout=10_000)


def turns(pane: ChatPane, kind: str):
    return [turn for turn in pane.view.turns if turn.kind == kind]


def ask_and_record(pane: ChatPane, qtbot, question: str, timeout: int = LONG) -> list[object]:
    """Asks through the input box (Enter) and returns what the pane saw, in order, as it happened."""
    events: list[object] = []
    original = pane._ask_event

    def spy(event):
        # What is on screen when each event arrives: passages turns and answer text so far.
        events.append((type(event).__name__, len(turns(pane, "passages")), event))
        original(event)

    pane.input.setPlainText(question)
    qtbot.keyClick(pane.input, Qt.Key.Key_Return)
    assert pane._ask_worker is not None, "Enter did not send the question"
    pane._ask_worker.signals.yielded.disconnect(pane._ask_event)
    pane._ask_worker.signals.yielded.connect(spy)
    assert not pane.send_button.isEnabled() and pane.stop_button.isEnabled()
    wait_idle(pane, qtbot, timeout)
    return events


def test_empty_state_then_import_shows_the_summary_and_the_chat(pane, qtbot, qtmodeltester, tmp_path):
    assert pane.stack.currentWidget() is pane.empty
    assert "Drop a WhatsApp export" in pane.empty.text()
    assert not pane.send_button.isEnabled()  # nothing typed yet

    import_demo(pane, qtbot)
    notes = [turn.text() for turn in turns(pane, "note")]
    assert any("Imported “Weekend away”: 431 messages" in note for note in notes), notes
    chat = pane.chat_model.chats()[0]
    assert chat.title == "Weekend away" and chat.message_count == 431
    details = pane.chat_model.index(0).data(DetailsRole)
    assert "Maya, Daniel" in details and "431 messages" in details and "2024" in details
    qtmodeltester.check(pane.chat_model)

    not_a_chat = tmp_path / "holiday.zip"
    not_a_chat.write_bytes(b"this is not a zip file at all")
    pane.import_files([not_a_chat])
    wait_idle(pane, qtbot)
    errors = [turn.text() for turn in turns(pane, "error")]
    assert errors and "holiday.zip could not be imported" in errors[-1], errors
    assert "Traceback" not in errors[-1]

    notes = tmp_path / "notes.txt"
    notes.write_text("Shopping list\nmilk\neggs\n", "utf-8")
    pane.import_files([notes])
    wait_idle(pane, qtbot)
    errors = [turn.text() for turn in turns(pane, "error")]
    assert "notes.txt could not be imported" in errors[-1] and "No WhatsApp messages" in errors[-1], errors
    pane.refresh_chats()
    wait_idle(pane, qtbot)
    assert pane.chat_model.rowCount() == 1  # neither file became a chat
    assert not any("Importing" in turn.text() for turn in pane.view.turns)  # progress turns gave way


def test_passages_first_then_streamed_answer_follow_up_and_viewer(pane, qtbot, qtmodeltester):
    import_demo(pane, qtbot)
    events = ask_and_record(pane, qtbot, "Who ended up paying for the hotel?")
    names = [name for name, _passages, _event in events]
    assert "MatchesFound" in names and "AnswerPiece" in names, names
    first_match, first_token = names.index("MatchesFound"), names.index("AnswerPiece")
    assert first_match < first_token
    assert events[first_token][1] == 1  # the passages turn was on screen before the first token
    assert sum(name == "AnswerPiece" for name in names) > 1  # streamed, not delivered at once
    assert isinstance(events[-1][2], Answer)

    passages = turns(pane, "passages")[0]
    assert isinstance(passages, PassagesTurn)
    found = next(event for _n, _p, event in events if isinstance(event, MatchesFound))
    assert passages.heading.text().startswith(found.retrieval.describe())  # "Found 6 passages in 1 chat"
    assert len(passages.cards) == len(found.retrieval.matches) > 0
    assert "similarity" in passages.cards[0].heading.text() and "Weekend away" in passages.cards[0].heading.text()
    kinds = [turn.kind for turn in pane.view.turns if turn.kind != "note"]
    assert kinds == ["question", "passages", "answer"]
    answer = turns(pane, "answer")[0]
    assert "daniel" in answer.label.text().lower(), answer.label.text()
    assert pane.send_button.isEnabled() is False and pane.stop_button.isEnabled() is False  # input is empty
    assert pane.input.hasFocus() or not pane.isActiveWindow()

    follow = ask_and_record(pane, qtbot, "How much was it?")
    found = next(event for _n, _p, event in follow if isinstance(event, MatchesFound))
    assert found.search_query.startswith("Who ended up paying for the hotel?")  # a follow-up
    final = follow[-1][2]
    assert isinstance(final, Answer) and final.text
    assert "340" in final.prompt.text
    assert len(pane.conversation.turns) == 2
    assert turns(pane, "answer")[-1].label.text().strip()

    # Clicking a passage opens the chat scrolled to it, the messages its card highlights highlighted.
    card = turns(pane, "passages")[0].cards[0]
    with qtbot.waitSignal(pane.viewer_opened, timeout=5_000) as opened:
        qtbot.mouseClick(card, Qt.MouseButton.LeftButton)
    viewer = opened.args[0]
    assert isinstance(viewer, ChatViewer)
    with qtbot.waitSignal(viewer.loaded, timeout=10_000):
        pass
    qtmodeltester.check(viewer.model)
    rows = viewer.model.highlighted_rows()
    wanted = set(card.highlighted_ids())
    assert wanted and {viewer.model.index(r).data(MessageIdRole) for r in rows} == wanted
    assert viewer.view.currentIndex().data(HighlightedRole)
    assert viewer.model.rowCount() > 400
    first_line = (card.match.excerpt or card.match.text).split("\n")[0].split(": ", 1)[-1][:30]
    assert any(first_line in viewer.model.index(r).data() for r in range(viewer.model.rowCount()))

    pane.new_conversation()
    assert not pane.view.turns and not pane.conversation.turns
    assert pane.stack.currentWidget() is pane.empty and "Ask anything" in pane.empty.text()


def test_stop_ends_the_answer_between_tokens(pane, qtbot):
    pane.services.settings.passages = 2  # a short prompt: this test is about stopping, not answering
    import_demo(pane, qtbot)
    seen = []

    def on_event(event):
        if isinstance(event, AnswerPiece):
            seen.append(event.text)
            if len(seen) == 2:
                pane.stop()

    worker = pane.ask("Where did they stay in June?")
    worker.signals.yielded.connect(on_event)
    with qtbot.waitSignal(worker.signals.cancelled, timeout=LONG):
        pass
    wait_idle(pane, qtbot)
    answer = turns(pane, "answer")[-1]
    assert answer.status.text() == "Stopped."
    assert 2 <= len(seen) < 6
    assert not pane.conversation.turns  # a stopped answer is not part of the conversation
    assert not pane.asking and not pane.stop_button.isEnabled()
    pane.input.setPlainText("Who ended up paying for the hotel?")
    assert pane.send_button.isEnabled()


def test_without_a_language_model_the_passages_still_show(qtbot):
    pane = make_pane(qtbot, chat_llm="qwen2.5-0.5b-instruct-q4_k_m")  # known, but not on this machine
    import_demo(pane, qtbot)
    pane.ask("Who ended up paying for the hotel?")
    wait_idle(pane, qtbot)
    assert turns(pane, "passages") and turns(pane, "passages")[0].cards
    answer = turns(pane, "answer")[-1].label.text()
    assert "Answers need a language model" in answer and "Qwen" in answer, answer


def test_without_the_embedder_import_says_what_is_missing(qtbot):
    pane = make_pane(qtbot, text_embedder="multilingual-e5-small-int8")  # downloadable, not here
    pane.import_files([DEMO_CHAT])
    wait_idle(pane, qtbot)
    errors = [turn.text() for turn in turns(pane, "error")]
    assert errors and "multilingual-e5-small" in errors[-1].lower(), errors
    assert pane.chat_model.rowCount() == 0


def test_new_conversation_during_an_import_lets_the_import_finish(pane, qtbot):
    """Before: the import's progress bubble was deleted under it ("Internal C++ object already deleted")."""
    messages = []
    pane.services.message.connect(messages.append)
    pane.import_files([DEMO_CHAT])
    qtbot.waitUntil(lambda: len(pane.view.turns) > 0, timeout=10_000)
    pane.new_conversation()
    wait_idle(pane, qtbot)
    qtbot.waitUntil(lambda: pane.chat_model.rowCount() == 1, timeout=10_000)
    assert any("Imported “Weekend away”" in text for text in messages), messages
