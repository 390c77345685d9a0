"""The window's notes folders (issue 24): File → Add notes folder… on real files from notes_qa, indexed as a job
with its summary in the status bar, the folder in the source list with its counts, a question answered from a
note (its card: title, place, file, best line highlighted), the note opened at the passage (a Markdown note in
the app's viewer, a PDF in the system's at its page), selecting the folder to ask only the notes, removing it.
A folder dropped on the window or the chat pane is a notes folder; the next start rescans every notes folder.

Stand-in models keep it quick and exact: the word-hash embedder (a real TextEmbedder, tests/text_embedders.py)
and an LLM that writes what it is told."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import QObject, QSettings, Qt, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QMessageBox

from gallery_app.ui.chat import note_viewer
from gallery_app.ui.chat.notes_section import STOPPED
from gallery_app.ui.chat.chat_list import DetailsRole
from gallery_app.ui.chat.conversation import AnswerTurn, PassagesTurn
from gallery_app.ui.main_window import MODELS_OFFERED_KEY, MainWindow
from gallery_app.ui.photos import folder_dialog
from gallery_app.ui.services import Services
from gallery_app.ui.settings import Settings
from gallery_app.ui.workers import Worker
from tests.chat_helpers import ScriptedLLM
from tests.conftest import SHARED_FIXTURES
from tests.gui.test_chat_evidence import card_lines, click_link
from tests.text_embedders import WordHashEmbedder

pytestmark = pytest.mark.timeout(120)

NOTES_QA = SHARED_FIXTURES / "notes_qa" / "folder"
TEA = "Vault of Knowledge/03. Culture/Food and Drinks/Tea.md"
GIT_PDF = "documents/github-git-cheat-sheet.pdf"
HANDOUT = "documents/handouts/Carpentries_MotivationDemotivation.docx"
TAR = "cheatsheets/tar.txt"
#: A long note (213 lines): the viewer must scroll to a passage in its middle.
SAGA = "Vault of Knowledge/01. Personal/Creative and Recreational/Metal Gear Saga.md"
LONG = 60_000


class FakeFolderDialog(QObject):
    """Stands in for the folder chooser: "chooses" ``chosen`` as soon as it is opened."""

    fileSelected = Signal(str)

    def __init__(self, chosen: Path):
        super().__init__()
        self.chosen = chosen

    def open(self) -> None:
        self.fileSelected.emit(str(self.chosen))

    def close(self) -> None:
        pass


def stand_in_services(llm: ScriptedLLM) -> Services:
    services = Services(Settings(passages=4))
    embedder = WordHashEmbedder(max_tokens=256, passage_prefix="passage: ", query_prefix="query: ")
    # On the instance: PySide resolves some methods of a Python subclass of a QObject subclass to QObject's own.
    services.text_embedder = lambda: embedder
    services.chat_llm = lambda: llm
    services.loaded = lambda role: True
    return services


def idle(window: MainWindow):
    return lambda: not window.chat_pane.busy and window.services.workers.active == 0


@pytest.fixture
def open_window(qtbot):
    windows: list[MainWindow] = []

    def make(llm: ScriptedLLM | None = None) -> MainWindow:
        QSettings().setValue(MODELS_OFFERED_KEY, True)  # not a first start: the models dialog stays closed
        window = MainWindow(stand_in_services(llm or ScriptedLLM(["I don't know."])))
        qtbot.addWidget(window)
        window.resize(1200, 900)
        with qtbot.waitSignal(window.demo_ready, timeout=LONG):
            window.show()
        qtbot.waitUntil(idle(window), timeout=LONG)  # and the start's rescan of notes folders
        windows.append(window)
        return window

    yield make
    for window in windows:
        for viewer in list(window.chat_pane.note_viewers):
            viewer.close()
        window.close()


@pytest.fixture
def notes_folder(tmp_path, shared_fixtures) -> Path:
    """A few real files of notes_qa, in their own folders as there."""
    folder = tmp_path / "My notes"
    for relative in (TEA, SAGA, GIT_PDF, HANDOUT, TAR):
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(NOTES_QA / relative, folder / relative)
    return folder


def add_from_the_menu(window: MainWindow, qtbot, folder: Path, monkeypatch) -> object:
    monkeypatch.setattr(folder_dialog, "folder_dialog", lambda parent, title, start: FakeFolderDialog(folder))
    notes = window.chat_pane.notes
    with qtbot.waitSignal(notes.folder_indexed, timeout=LONG) as indexed:
        window.add_notes_action.trigger()
    qtbot.waitUntil(lambda: notes.model.rowCount() == 1, timeout=10_000)
    qtbot.waitUntil(idle(window), timeout=LONG)
    return indexed.args[0]


def ask(window: MainWindow, qtbot, question: str) -> PassagesTurn:
    pane = window.chat_pane
    before = len([turn for turn in pane.view.turns if isinstance(turn, PassagesTurn)])
    assert pane.ask(question) is not None
    qtbot.waitUntil(idle(window), timeout=LONG)
    passages = [turn for turn in pane.view.turns if isinstance(turn, PassagesTurn)]
    assert len(passages) == before + 1
    return passages[-1]


def select(view, rows: list[int]) -> None:
    view.clearSelection()
    for row in rows:
        view.selectionModel().select(view.model().index(row), view.selectionModel().SelectionFlag.Select)


def test_a_notes_folder_added_from_the_menu_is_listed_asked_opened_and_removed(open_window, notes_folder, qtbot,
                                                                              monkeypatch, qtmodeltester):
    window = open_window(ScriptedLLM(["Starbucks", " serves", " Tazo", " [1]."]))
    pane, notes = window.chat_pane, window.chat_pane.notes
    assert not notes.isVisible()  # no notes folder yet: the chats have the column

    summary = add_from_the_menu(window, qtbot, notes_folder, monkeypatch)
    assert window.tabs.currentWidget() is pane
    said = summary.describe()
    assert said.startswith("3 notes, 1 PDF (2 pages), 1 Word file in ") and "(5 added)" in said, said
    assert window.statusBar().currentMessage() == said
    assert any(said in turn.text() for turn in pane.view.turns if turn.kind == "note")
    assert notes.isVisible()
    index = notes.model.index(0)
    assert index.data() == "My notes"
    details = index.data(DetailsRole)
    assert details.startswith("3 notes, 1 PDF (2 pages), 1 Word file · ") and " passages" in details, details
    assert str(notes_folder) in index.data(Qt.ItemDataRole.ToolTipRole)
    qtmodeltester.check(notes.model)
    assert "all chats and notes folders" in pane.scope_label.text()

    # Only the notes folder selected: only note passages, and the answer's citation is of the tea note.
    select(notes.view, [0])
    assert pane.sources()[2] == frozenset({"notes"}) and "1 selected notes folder" in pane.scope_label.text()
    passages = ask(window, qtbot, "Which tea brand does Starbucks serve?")
    assert passages.cards and all(card.match.is_note for card in passages.cards)
    assert passages.heading.text().startswith(f"Found {len(passages.cards)} passage")
    card = passages.cards[0]
    match = card.match
    assert match.note.relative_path == TEA and "Starbucks uses Tazo Tea brand." in match.text
    assert card.heading.text().startswith(f"<b>{match.chat_title}</b> · {match.day} · similarity ")
    assert match.chat_title == "Tea" and card.file.text() == TEA
    highlighted, _other = card_lines(card)
    best = match.text.split("\n")[match.note.best_lines[0]]
    assert highlighted == [best], (highlighted, best)
    assert card.toolTip() == "Open the note at this passage"

    # The answer's [1] opens the note in the app's viewer, at the passage, its best line highlighted.
    answer = next(turn for turn in reversed(pane.view.turns) if isinstance(turn, AnswerTurn))
    assert answer.answer.citations == [1] and answer.answer.cited_matches[0].key == match.key
    assert answer.sources[0].text().endswith(f"Tea · {match.day}")
    with qtbot.waitSignal(pane.note_opened, timeout=5_000) as opened:
        click_link(qtbot, answer.sources[0], "[1]")
    viewer = opened.args[0]
    qtbot.waitUntil(lambda: viewer.passage is not None, timeout=10_000)
    assert viewer.passage.found and viewer.highlighted() == [match.text, best]
    viewer.close()

    # A card opens its note too: a long one, scrolled to the passage in its middle.
    passages = ask(window, qtbot, "Who fired the Davy Crockett nuclear warhead at the Russian research facility?")
    card = passages.cards[0]
    match = card.match
    assert match.note.relative_path == SAGA and match.note.start > 0, match
    best = match.text.split("\n")[match.note.best_lines[0]]
    assert card_lines(card)[0] == [best]
    with qtbot.waitSignal(pane.note_opened, timeout=5_000) as opened:
        qtbot.mouseClick(card, Qt.MouseButton.LeftButton)
    viewer = opened.args[0]
    qtbot.waitUntil(lambda: viewer.passage is not None, timeout=10_000)
    assert viewer.passage.found and viewer.highlighted() == [match.text, best]
    assert viewer.text.toPlainText() == viewer.passage.text and len(viewer.passage.text) > len(match.text)
    assert viewer.text.textCursor().block().text() == best
    qtbot.waitUntil(lambda: viewer.text.verticalScrollBar().value() > 0
                    and viewer.text.viewport().rect().contains(viewer.text.cursorRect()), timeout=5_000)
    viewer.close()

    # A PDF passage opens in the system's viewer at its page.
    opened_urls = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened_urls.append(url) or True)
    passages = ask(window, qtbot, "git log follow: version history for a file, including renames")
    pdf = next(card for card in passages.cards if card.match.note.kind == "pdf")
    assert pdf.match.note.page in (1, 2) and pdf.file.text() == GIT_PDF
    assert pdf.toolTip() == f"Open the PDF at page {pdf.match.note.page} in the system's viewer"
    viewers = len(pane.note_viewers)
    qtbot.mouseClick(pdf, Qt.MouseButton.LeftButton)
    assert [url.toString() for url in opened_urls] == [
        f"{note_viewer.QUrl.fromLocalFile(str(notes_folder / GIT_PDF)).toString()}#page={pdf.match.note.page}"]
    assert window.statusBar().currentMessage() == f"Opened {GIT_PDF} at page {pdf.match.note.page}."
    assert len(pane.note_viewers) == viewers  # no viewer of the app's own

    # Everything asked: the demo chats' passages too; only the chats selected: no note passage.
    select(notes.view, [])
    passages = ask(window, qtbot, "Who put the hotel room on the card?")
    assert any(not card.match.is_note for card in passages.cards)
    select(pane.chat_list, list(range(pane.chat_model.rowCount())))
    passages = ask(window, qtbot, "Which tea brand does Starbucks serve?")
    assert passages.cards and not any(card.match.is_note for card in passages.cards)
    select(pane.chat_list, [])

    # Removed from its context menu, after a confirmation; the files stay.
    menu = notes._context_menu(notes.view.visualRect(notes.model.index(0)).center())
    remove = next(action for action in menu.actions() if action.text() == "Remove notes folder…")
    menu.close()
    remove.trigger()
    box = notes.confirm_box
    assert box.isVisible() and str(notes_folder) in box.text() and box.textFormat() == Qt.TextFormat.PlainText
    with qtbot.waitSignal(notes.folder_removed, timeout=LONG) as removed:
        next(button for button in box.buttons()
             if box.buttonRole(button) == QMessageBox.ButtonRole.DestructiveRole).click()
    assert removed.args[0].startswith(f"Removed the notes folder {notes_folder} (3 notes, 1 PDF (2 pages), 1 Word file)")
    qtbot.waitUntil(lambda: notes.model.rowCount() == 0 and not notes.isVisible(), timeout=10_000)
    assert (notes_folder / TEA).is_file()
    passages = ask(window, qtbot, "Which tea brand does Starbucks serve?")
    assert not any(card.match.is_note for card in passages.cards)


def test_a_folder_of_notes_dropped_on_the_window_or_the_chat_pane_is_a_notes_folder(open_window, tmp_path, qtbot):
    window = open_window()
    notes = window.chat_pane.notes
    folder = tmp_path / "Journal"
    folder.mkdir()
    (folder / "boiler.md").write_text("# Boiler\n\nThe boiler warranty runs until March 2027.\n", "utf-8")
    (folder / "scan.png").write_bytes(b"not really a picture")  # one photo among more notes
    (folder / "trip.txt").write_text("Kyoto for three days, then Fushimi Inari at dawn.\n", "utf-8")
    window.tabs.setCurrentWidget(window.photo_pane)
    with qtbot.waitSignal(notes.folder_indexed, timeout=LONG) as indexed:
        window.open_paths([folder])
    assert indexed.args[0].describe().startswith("2 notes in ")
    assert window.tabs.currentWidget() is window.chat_pane
    qtbot.waitUntil(lambda: notes.model.rowCount() == 1, timeout=10_000)

    # On the chat pane any folder is a notes folder (here: added again, so rescanned: nothing changed).
    with qtbot.waitSignal(notes.folder_indexed, timeout=LONG) as indexed:
        window.chat_pane.drop_paths([folder])
    assert "(3 unchanged)" in indexed.args[0].describe()  # the photo is a file of the folder too (skipped)
    qtbot.waitUntil(idle(window), timeout=LONG)


def test_the_next_start_rescans_every_notes_folder_quietly(open_window, tmp_path, qtbot):
    folder = tmp_path / "Journal"
    folder.mkdir()
    (folder / "boiler.md").write_text("# Boiler\n\nThe boiler warranty runs until March 2027.\n", "utf-8")
    first = open_window()
    with qtbot.waitSignal(first.chat_pane.notes.folder_indexed, timeout=LONG):
        first.add_notes_folder(folder)
    qtbot.waitUntil(idle(first), timeout=LONG)
    first.close()

    (folder / "boiler.md").write_text("# Boiler\n\nThe boiler warranty runs until April 2028.\n", "utf-8")
    (folder / "kettle.md").write_text("# Kettle\n\nDescale the kettle every month.\n", "utf-8")
    second = open_window()
    qtbot.waitUntil(lambda: second.chat_pane.notes.model.rowCount() == 1, timeout=10_000)
    message = second.statusBar().currentMessage()
    assert message.startswith("Notes updated: 2 notes in ") and "(1 added, 1 changed)" in message, message
    assert not [turn for turn in second.chat_pane.view.turns if turn.kind == "note"]  # quietly: no turn
    passages = ask(second, qtbot, "When does the boiler warranty end?")
    assert "April 2028" in passages.cards[0].match.text


def test_indexing_cancelled_while_it_waits_for_another_writer_adds_nothing_and_says_so(open_window, tmp_path, qtbot):
    window = open_window()
    notes = window.chat_pane.notes
    folder = tmp_path / "Journal"
    folder.mkdir()
    (folder / "boiler.md").write_text("# Boiler\n\nThe boiler warranty runs until March 2027.\n", "utf-8")
    release = threading.Event()
    blocker = Worker(lambda context: release.wait(30)).writing("a test's writer")
    window.services.run(blocker)
    try:
        worker = window.add_notes_folder(folder)
        assert worker.waiting_note() == "Waiting for a test's writer to finish…"
        assert window.task_bar.isVisible()
        assert window.task_bar.label.text().startswith("Indexing notes in Journal — Waiting")
        with qtbot.waitSignal(notes.folder_indexed, timeout=LONG) as indexed:
            window.task_bar.cancel_current()
    finally:
        release.set()
    assert indexed.args[0] is None
    # The task bar hears of the cancel in an event of its own, which may come just after.
    qtbot.waitUntil(lambda: window.statusBar().currentMessage() == "Indexing notes in Journal: cancelled.", timeout=5_000)
    assert STOPPED in window.chat_pane.view.turns[-1].text()
    qtbot.waitUntil(idle(window), timeout=LONG)
    notes.refresh()
    qtbot.waitUntil(idle(window), timeout=LONG)
    assert notes.model.rowCount() == 0
