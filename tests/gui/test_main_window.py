"""The window as a person first sees it: demo chats and photos, model status, a clean close."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QThreadPool

from gallery_app.core import resources
from gallery_app.core.models.specs import Role
from gallery_app.ui.main_window import MainWindow


@pytest.fixture
def window(qtbot):
    main = MainWindow()
    qtbot.addWidget(main)
    main.show()
    yield main
    main.close()
    assert QThreadPool.globalInstance().activeThreadCount() == 0
    assert main.photo_grid.model.pool.activeThreadCount() == 0


def test_opens_on_the_demo_chats_and_photos(window, qtbot):
    assert [window.tabs.tabText(i) for i in range(window.tabs.count())] == ["Chats", "Photos"]
    assert window.chat_pane.chats.count() == len(resources.demo_chat_files()) >= 2
    assert "[" in window.chat_pane.viewer.toPlainText() or ":" in window.chat_pane.viewer.toPlainText()
    photos = resources.demo_photo_files()
    assert window.photo_grid.model.rowCount() == len(photos) >= 5
    window.tabs.setCurrentIndex(1)
    qtbot.waitUntil(lambda: window.photo_grid.model.loaded_thumbnails() == len(photos), timeout=20_000)


def test_model_status_arrives_without_blocking(window, qtbot):
    with qtbot.waitSignal(window.models_checked, timeout=30_000) as blocker:
        pass
    states = {state.role: state for state in blocker.args[0]}
    assert set(states) == set(Role)
    assert states[Role.TEXT_EMBEDDER].usable and states[Role.CHAT_LLM].usable
    assert not states[Role.CLIP_VISION].usable
    assert "CLIP" in window.photo_grid.header.text() and "models fetch" in window.photo_grid.header.text()
    assert "Models: 2 of 4 ready" == window.model_label.text()


def test_photo_model_passes_the_qt_model_tester(window, qtmodeltester):
    qtmodeltester.check(window.photo_grid.model)


def test_keyboard_shortcuts_switch_halves(window, qtbot):
    from PySide6.QtCore import Qt

    qtbot.keyClick(window, Qt.Key.Key_2, Qt.KeyboardModifier.ControlModifier)
    assert window.tabs.currentIndex() == 1
    qtbot.keyClick(window, Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)
    assert window.tabs.currentIndex() == 0


def test_a_broken_photo_is_reported_not_fatal(window, qtbot, tmp_path):
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"\xff\xd8\xff\xe0 this is not really a jpeg")
    window.photo_grid.show_photos([broken], "test")
    window.tabs.setCurrentIndex(1)
    with qtbot.waitSignal(window.photo_grid.model.thumbnail_failed, timeout=10_000) as failed:
        window.photo_grid.view.viewport().update()
    assert failed.args[0].startswith("broken.jpg was skipped")
