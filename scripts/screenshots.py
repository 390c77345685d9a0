"""Pictures of the real window, for the README (`make screenshots`).

Starts the app on a fresh data folder, waits for the demo data, asks the demo chat a question and waits
for the streamed answer, then shows the photo grid (searched when a CLIP model is installed; otherwise
as a newcomer without CLIP sees it) and saves both windows as PNG files. With ../shared beside the
checkout it then imports a real chat written by other people (chat_qa/dutch_friends), asks it a question
and a follow-up, and saves the conversation and the chat viewer opened from the top passage; and adds the real notes
folder notes_qa (as File → Add notes folder… does) and saves the chat pane answering a question from a note.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

QUESTION = "Who ended up paying for the hotel?"
PHOTO_QUERY = "a cat"
REAL_CHAT = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "chat_qa" / "dutch_friends.txt"
REAL_QUESTIONS = ("What oddly specific meanings did Rens find for two of the words he entered in the word game "
                  "on 24 January?", "What was the solution of the eight-letter word puzzle on 25 January?",
                  "And who got it right?")
NOTES_FOLDER = REAL_CHAT.parents[1] / "notes_qa" / "folder"
NOTES_QUESTION = "Which tea brand does Starbucks serve?"


def main(out_dir: str = "docs") -> int:
    os.environ.setdefault("GALLERY_APP_DATA_DIR", tempfile.mkdtemp(prefix="gallery-screenshots-"))
    from PySide6.QtCore import QEventLoop, QSettings, QThreadPool, QTimer
    from PySide6.QtWidgets import QApplication

    from gallery_app.ui.main_window import MODELS_OFFERED_KEY, MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName("gallery_app-screenshots")
    app.setApplicationName("gallery_app-screenshots")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, os.environ["GALLERY_APP_DATA_DIR"])
    QSettings().setValue(MODELS_OFFERED_KEY, True)  # the picture is of the window, not of the models dialog
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    def wait_for(signal, timeout_ms: int = 180_000) -> None:
        loop = QEventLoop()
        signal.connect(loop.quit)
        QTimer.singleShot(timeout_ms, loop.quit)
        loop.exec()

    def settle(ms: int) -> None:
        loop = QEventLoop()
        QTimer.singleShot(ms, loop.quit)
        loop.exec()

    window = MainWindow()
    window.resize(1280, 1040)
    window.show()
    wait_for(window.demo_ready)
    worker = window.chat_pane.ask(QUESTION)
    if worker is not None:
        wait_for(worker.signals.finished)
    settle(800)
    turns = window.chat_pane.view.turns
    if turns:  # show the question and the start of its passages, as a person reads them
        window.chat_pane.view.verticalScrollBar().setValue(max(0, turns[0].y() - 8))
    settle(300)
    window.grab().save(str(out / "screenshot-chat.png"))

    window.tabs.setCurrentWidget(window.photo_pane)
    if window.photo_pane.clip_problem is None:
        worker = window.photo_pane.search_text(PHOTO_QUERY)
        if worker is not None:
            wait_for(worker.signals.finished)
    settle(2500)  # the visible thumbnails arrive from their pool
    window.grab().save(str(out / "screenshot-photos.png"))
    written = [out / "screenshot-chat.png", out / "screenshot-photos.png"]
    if REAL_CHAT.exists():
        written += real_chat_pictures(window, out, wait_for, settle)
    if NOTES_FOLDER.is_dir():
        written += notes_pictures(window, out, wait_for, settle)
    window.close()
    QThreadPool.globalInstance().waitForDone(-1)
    print("wrote " + ", ".join(map(str, written)))
    return 0


def real_chat_pictures(window, out: Path, wait_for, settle) -> list[Path]:
    """The real chat imported as a drop does it, its questions asked afresh, the viewer at the top passage."""
    chat = window.chat_pane
    window.tabs.setCurrentWidget(chat)
    chat.new_conversation()
    worker = chat.import_files([REAL_CHAT])
    if worker is not None:
        wait_for(worker.signals.finished, 600_000)
    chat.new_conversation()
    for question in REAL_QUESTIONS:
        worker = chat.ask(question)
        if worker is not None:
            wait_for(worker.signals.finished)
    settle(800)
    passages = [turn for turn in chat.view.turns if turn.kind == "passages"]
    if passages:  # the follow-up, its passages and its answer
        chat.view.verticalScrollBar().setValue(max(0, passages[-1].y() - 80))
    settle(300)
    conversation = out / "screenshot-real-chat.png"
    window.grab().save(str(conversation))
    written = [conversation]
    if passages:
        with_viewer = []
        chat.viewer_opened.connect(with_viewer.append)
        chat._passage_clicked(passages[0].cards[0].match)
        if with_viewer:
            viewer = with_viewer[0]
            if not viewer.is_loaded:
                wait_for(viewer.loaded)
            settle(1500)
            path = out / "screenshot-real-viewer.png"
            viewer.grab().save(str(path))
            viewer.close()
            written.append(path)
    return written


def notes_pictures(window, out: Path, wait_for, settle) -> list[Path]:
    """The notes folder added as File → Add notes folder… adds it, then a question its notes answer, asked of
    every chat and notes folder together."""
    import shutil

    from PySide6.QtGui import QCursor

    chat = window.chat_pane
    # A copy under a name a person's folder has ("Notes"; the fixture's own is "folder").
    folder = Path(tempfile.mkdtemp(prefix="gallery-notes-")) / "Notes"
    shutil.copytree(NOTES_FOLDER, folder)
    worker = window.add_notes_folder(folder)
    wait_for(worker.signals.finished, 900_000)
    chat.new_conversation()
    # Three passages (Settings → Passages) rather than six: the top note's card and the answer below its
    # passages then fit in one picture.
    window.services.settings.passages = 3
    worker = chat.ask(NOTES_QUESTION)
    if worker is not None:
        wait_for(worker.signals.finished)
    QCursor.setPos(window.mapToGlobal(window.rect().bottomLeft()))  # no card drawn as hovered
    settle(800)
    chat.view.verticalScrollBar().setValue(chat.view.verticalScrollBar().maximum())
    settle(300)
    path = out / "screenshot-notes.png"
    window.grab().save(str(path))
    return [path]


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
