"""The real window when the language model's process dies in the middle of an answer."""

from __future__ import annotations

import signal

import pytest

from gallery_app.core.chat.events import Answer
from tests.gui.test_chat_pane import ask_and_record, import_demo, make_pane, turns, wait_idle  # noqa: F401
from tests.llm_crash import crash_in_the_next_answer

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
QUESTION = "Who ended up paying for the hotel?"


@pytest.mark.parametrize("sig, said", [(signal.SIGSEGV, "signal 11, SIGSEGV"), (signal.SIGKILL, "signal 9, SIGKILL")])
def test_the_window_says_the_model_stopped_keeps_the_passages_and_answers_the_next_question(
        qtbot, monkeypatch, sig, said):
    pane = make_pane(qtbot)
    try:
        import_demo(pane, qtbot)
        killed = crash_in_the_next_answer(monkeypatch, sig)
        events = ask_and_record(pane, qtbot, QUESTION)
        assert killed, "the answer never started"
        names = [name for name, _shown, _event in events]
        assert "MatchesFound" in names and "Answer" not in names
        (failed,) = [turn for turn in turns(pane, "answer")]
        assert failed.objectName() == "error"
        assert f"The language model stopped unexpectedly ({said}" in failed.text()
        assert "Your chats are safe." in failed.text()
        assert len(turns(pane, "passages")) == 1  # the passages shown before the crash stay
        assert pane.window() is not None and pane.isVisible()
        assert pane.send_button.isEnabled() or pane.input.toPlainText() == ""

        again = ask_and_record(pane, qtbot, QUESTION)
        assert isinstance(again[-1][2], Answer) and again[-1][2].text
        assert len(turns(pane, "passages")) == 2
        assert pane.services.chat_llm().process_id not in (None, killed[0])
    finally:
        wait_idle(pane, qtbot)
        pane.services.workers.cancel_all()
        pane.services.workers.wait()
        pane.services.shutdown()
