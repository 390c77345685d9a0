"""The window on a damaged database: a dialog that says what is wrong and what to do, and the file untouched."""

from __future__ import annotations

import time

import pytest
from PySide6.QtCore import QSettings, QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from gallery_app.core import paths
from gallery_app.core.chat.importer import import_chat
from gallery_app.core.errors import StoreDamaged
from gallery_app.core.store import open_store
from gallery_app.ui import app
from gallery_app.ui.main_window import MODELS_OFFERED_KEY, MainWindow
from gallery_app.ui.services import Services
from tests.chat_helpers import DEMO_CHAT, HashEmbedder
from tests.store_damage import fingerprint, garble_table, truncate

TITLE = "Gallery cannot use its data"


@pytest.fixture
def data(app_dirs):
    """The data folder holding a real store with the demo chat in it."""
    folder = paths.data_dir()
    conn = open_store()
    import_chat(conn, DEMO_CHAT, HashEmbedder())
    conn.close()
    QSettings().setValue(MODELS_OFFERED_KEY, True)  # not a first start: no models dialog in the way
    return folder


def store_boxes() -> list[QMessageBox]:
    """The store dialogs on screen (a dialog is a top-level window, with a parent or not)."""
    return [w for w in QApplication.topLevelWidgets()
            if isinstance(w, QMessageBox) and w.windowTitle() == TITLE and w.isVisible()]


def close_store_boxes() -> None:
    """A test's dialog closed, so that the next test counts only its own."""
    for box in store_boxes():
        box.done(0)


def test_the_window_does_not_open_on_a_truncated_database_and_says_why(data, qtbot):
    """Before: the window opened and every pane said "Something went wrong: apsw.CorruptError: …"."""
    db = data / paths.DATABASE_FILENAME
    truncate(db, db.stat().st_size // 2)
    before = fingerprint(data)
    seen: list[tuple[str, str]] = []

    def answer_the_dialog() -> None:
        for box in store_boxes():
            seen.append((box.text(), box.informativeText()))
            box.done(0)
        if not seen and time.monotonic() > deadline:  # no dialog came: end the event loop, the test fails
            for widget in QApplication.topLevelWidgets():
                widget.close()
            QApplication.quit()

    deadline = time.monotonic() + 30
    poll = QTimer(interval=20)
    poll.timeout.connect(answer_the_dialog)
    poll.start()
    try:
        code = app.main([])
    finally:
        poll.stop()
    assert code == 1
    assert len(seen) == 1
    text, hint = seen[0]
    assert text.startswith(f"The database {db} is damaged") and "Nothing was changed" in text
    assert "Restore it from a backup" in hint and "GALLERY_APP_DATA_DIR=" in hint
    assert hint.startswith("Restore it") and "<p>" not in hint  # before: "<p>Restore it …</p>" on screen
    assert fingerprint(data) == before


def test_a_damaged_page_met_by_a_job_is_reported_once_in_a_dialog(data, qtbot):
    """Before: the chat list said "Something went wrong: apsw.CorruptError: database disk image is malformed"."""
    db = data / paths.DATABASE_FILENAME
    garble_table(db, "messages")  # the first pages are whole: the store opens, the chat list meets the damage
    before = fingerprint(data)
    services = Services()
    window = app.start_window(services)
    assert window is not None
    qtbot.addWidget(window)
    window.show()
    try:
        qtbot.waitUntil(lambda: len(store_boxes()) == 1, timeout=30_000)
        box = store_boxes()[0]
        assert box.text().startswith(f"The database {db} is damaged") and box.parent() is window
        assert f"{db} is damaged" in window.chat_pane.scope_label.text()
        with qtbot.waitSignal(services.store_failed, timeout=30_000):
            window.chat_pane.refresh_chats()  # meets the damage again
        qtbot.wait(100)
        assert len(store_boxes()) == 1  # once is enough
    finally:
        close_store_boxes()
        window.close()
    assert fingerprint(data) == before


def test_damage_met_while_the_window_is_still_being_built_is_reported(data, qtbot, monkeypatch):
    """Before: the chat list's job met the damage before the window had finished building and was listening:
    no dialog (CI, one run in many, on a busy machine). Here the window's last step waits for the jobs."""
    garble_table(data / paths.DATABASE_FILENAME, "messages")
    services = Services()
    check_models = MainWindow.check_models

    def slow_last_step(window):
        services.workers.pool.waitForDone(30_000)  # the chat list's job has met the damage and said so
        check_models(window)

    monkeypatch.setattr(MainWindow, "check_models", slow_last_step)
    window = app.start_window(services)
    assert window is not None
    qtbot.addWidget(window)
    try:
        qtbot.waitUntil(lambda: [box.parent() for box in store_boxes()] == [window], timeout=30_000)
    finally:
        close_store_boxes()
        window.close()


def test_a_job_meeting_a_damaged_page_gets_the_store_error_a_person_can_read(data, qtbot):
    """Before: apsw.CorruptError reached the job, and the window showed it as "Something went wrong"."""
    db = data / paths.DATABASE_FILENAME
    garble_table(db, "chunks")
    services = Services()
    with qtbot.waitSignal(services.store_failed) as failed, pytest.raises(StoreDamaged) as raised:
        with services.connect() as conn:
            conn.execute("SELECT text FROM chunks").fetchall()
    assert raised.value is failed.args[0] and f"The database {db} is damaged" in str(raised.value)
