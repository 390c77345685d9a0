"""Settings → Answer instructions: checked as they are typed (what is wrong is said, OK stays off and nothing
is saved), Reset to default, and what OK saved is what the chat pane's next question is asked with."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox

from gallery_app.core.chat.ask_options import AskOptions
from gallery_app.ui.chat import ChatPane
from gallery_app.ui.services import Services
from gallery_app.ui.settings import Settings
from gallery_app.ui.settings_dialog import SettingsDialog
from tests.chat_helpers import DEMO_CHAT, HashEmbedder, ScriptedLLM

pytestmark = pytest.mark.timeout(60)

CAPTAIN = "Answer like a ship's captain, from the messages only.\n\nLog:\n{context}\n\nOrders: {question}"


def make_dialog(qtbot, services) -> SettingsDialog:
    dialog = SettingsDialog(services)
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


def ok_button(dialog: SettingsDialog):
    return dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok)


def wait_checked(dialog: SettingsDialog, qtbot) -> None:
    # The presence check of the model choices runs on a worker: let it finish inside the test.
    qtbot.waitUntil(lambda: dialog.presence_check is None, timeout=20_000)


def test_invalid_instructions_are_refused_with_what_is_wrong(qtbot):
    services = Services(Settings.load())
    dialog = make_dialog(qtbot, services)
    assert dialog.instructions.toPlainText() == AskOptions.instructions
    assert dialog.instructions_problem.isHidden() and ok_button(dialog).isEnabled()

    dialog.instructions.setFocus()
    dialog.instructions.moveCursor(dialog.instructions.textCursor().MoveOperation.End)
    qtbot.keyClicks(dialog.instructions, " in {language}")  # typed, as a person would
    problem = dialog.instructions_problem.text()
    assert "{language}, which is not a slot" in problem and "{{ or }}" in problem
    assert dialog.instructions_problem.isVisible() and not ok_button(dialog).isEnabled()
    dialog.accept()  # Enter, or anything else that gets past the disabled button
    assert dialog.isVisible() and dialog.result() == 0
    assert Settings.load().answer_instructions == "" and services.settings.answer_instructions == ""

    for _ in " in {language}":
        qtbot.keyClick(dialog.instructions, Qt.Key.Key_Backspace)
    assert dialog.instructions_problem.isHidden() and ok_button(dialog).isEnabled()

    dialog.instructions.setPlainText("Answer briefly.\n\n{context}")
    assert "need {question}" in dialog.instructions_problem.text() and not ok_button(dialog).isEnabled()
    dialog.instructions.setPlainText("<b>{context}</b> {question}")
    assert "on one line (line 1)" in dialog.instructions_problem.text()
    assert dialog.instructions_problem.textFormat() == Qt.TextFormat.PlainText  # the person's text, never markup
    wait_checked(dialog, qtbot)
    dialog.reject()


def test_reset_to_default_restores_the_apps_instructions(qtbot):
    Settings(answer_instructions=CAPTAIN).save()
    services = Services(Settings.load())
    dialog = make_dialog(qtbot, services)
    assert dialog.instructions.toPlainText() == CAPTAIN
    dialog.instructions.setPlainText("{context}")  # broken first: reset mends that too
    assert not ok_button(dialog).isEnabled()
    qtbot.mouseClick(dialog.reset_instructions, Qt.MouseButton.LeftButton)
    assert dialog.instructions.toPlainText() == AskOptions.instructions
    assert dialog.instructions_problem.isHidden() and ok_button(dialog).isEnabled()
    assert dialog.chosen().answer_instructions == ""  # the app's own: a later version's reach this person too
    wait_checked(dialog, qtbot)
    ok_button(dialog).click()
    assert Settings.load().answer_instructions == "" and Settings.load().instructions == AskOptions.instructions

    dialog = make_dialog(qtbot, services)
    dialog.instructions.setPlainText(CAPTAIN)
    dialog.restore_defaults()  # the dialog's Restore Defaults resets them with everything else
    assert dialog.instructions.toPlainText() == AskOptions.instructions and dialog.chosen() == Settings()
    wait_checked(dialog, qtbot)
    dialog.reject()


def test_instructions_from_a_hand_edited_settings_file_that_cannot_work_are_the_apps_own():
    from PySide6.QtCore import QSettings

    QSettings().setValue("answer_instructions", "Answer in {language}.\n{context}\n{question}")
    assert Settings.load().answer_instructions == ""
    assert Settings.load().ask_options == AskOptions()


def test_saved_instructions_are_what_the_panes_next_question_is_asked_with(qtbot):
    services = Services(Settings.load())
    llm, embedder = ScriptedLLM(["Daniel paid [1]."]), HashEmbedder()
    # On the instance: PySide resolves some methods of a Python subclass of a QObject subclass to QObject's own.
    services.text_embedder = lambda: embedder
    services.chat_llm = lambda: llm
    services.loaded = lambda role: True
    pane = ChatPane(services)
    qtbot.addWidget(pane)
    pane.resize(1000, 700)
    pane.show()
    try:
        idle = lambda: not pane.busy and services.workers.active == 0  # noqa: E731
        qtbot.waitUntil(idle, timeout=60_000)
        pane.import_files([DEMO_CHAT])
        qtbot.waitUntil(idle, timeout=60_000)
        qtbot.waitUntil(lambda: pane.chat_model.rowCount() == 1, timeout=10_000)

        pane.ask("Who paid for the hotel?")
        qtbot.waitUntil(idle, timeout=60_000)
        assert "You answer questions about the user's own chat messages" in llm.prompts[-1]

        dialog = make_dialog(qtbot, services)
        dialog.instructions.setPlainText(CAPTAIN)
        wait_checked(dialog, qtbot)
        ok_button(dialog).click()
        assert Settings.load().answer_instructions == CAPTAIN

        pane.ask("Who paid for the hotel?")
        qtbot.waitUntil(idle, timeout=60_000)
        prompt = llm.prompts[-1]
        assert "<|system|>\nAnswer like a ship's captain, from the messages only.\n<|user|>\nLog:\n[1] " in prompt
        assert prompt.endswith("\n\nOrders: Who paid for the hotel?\n<|assistant|>\n")
        assert "You answer questions about the user's own chat messages" not in prompt
    finally:
        pane.stop()
        services.workers.wait()
        services.shutdown()
