"""The chat viewer on the six real chats of ../shared/fixtures/chat_qa (issue 22, steps 1 and 5).

Every message can be scrolled to and is painted, the scroll range is the content's height, and a viewer
opened at a message (or moved to one with show_message) shows it centred, current and selected, with its
highlight still visible. The viewer keeps its own size (720×640), as the window opens it: at that size
the rows of game results with an unbreakable line of numbers were wider than the list, and the list
was blank.

The chats are imported once per run with the tests' word-hashing embedder: the viewer reads messages,
never vectors, and the six imports take some 6 s so (the real MiniLM would take minutes on two cores).
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, QRect

from gallery_app.core.chat.importer import import_chat
from gallery_app.core.paths import DATABASE_FILENAME
from gallery_app.core.store import open_store
from gallery_app.ui.chat.viewer import HIGHLIGHT, ChatViewer, HighlightedRole, MessageIdRole
from tests.conftest import SHARED_FIXTURES
from tests.text_embedders import WordHashEmbedder

pytestmark = pytest.mark.shared_fixtures

CHAT_QA = SHARED_FIXTURES / "chat_qa"
CHATS = sorted(path.stem for path in CHAT_QA.glob("*.txt")) if CHAT_QA.is_dir() else []


@pytest.fixture(scope="session")
def real_chats_store(tmp_path_factory) -> tuple[Path, dict[str, int]]:
    """The six real chats imported once (the database file, and each chat's id by name)."""
    if not CHATS:
        pytest.skip("needs ../shared/fixtures/chat_qa")  # the shared_fixtures mark says why (and fails in CI)
    folder = tmp_path_factory.mktemp("real-chats")
    conn = open_store(folder / DATABASE_FILENAME)
    embedder = WordHashEmbedder(dims=64)
    try:
        ids = {name: import_chat(conn, CHAT_QA / f"{name}.txt", embedder).chat_id for name in CHATS}
    finally:
        conn.close()
    return folder / DATABASE_FILENAME, ids


@pytest.fixture
def chat_id_of(real_chats_store, app_dirs):
    """This test's data folder holds a copy of the six chats; the chat's id by name."""
    database, ids = real_chats_store
    data, _models = app_dirs
    data.mkdir(parents=True, exist_ok=True)
    shutil.copy(database, data / DATABASE_FILENAME)
    return ids.__getitem__


def open_viewer(qtbot, services, chat_id: int, highlight=()) -> ChatViewer:
    viewer = ChatViewer(services, chat_id, highlight, title="Real chat")
    qtbot.addWidget(viewer)
    with qtbot.waitSignal(viewer.positioned, timeout=30_000):
        viewer.show()
    return viewer


def painted_row(viewer: ChatViewer, rect: QRect) -> int:
    """The row the view paints in the middle of the visible part of ``rect`` (-1 for none)."""
    visible = rect.intersected(viewer.view.viewport().rect())
    return viewer.view.indexAt(visible.center()).row() if visible.isValid() else -1


def content_height(viewer: ChatViewer) -> int:
    view, model = viewer.view, viewer.model
    last = view.visualRect(model.index(model.rowCount() - 1))
    return last.bottom() + 1 + view.verticalScrollBar().value() + view.spacing()


def assert_shown_at(viewer: ChatViewer, row: int) -> None:
    """``row`` is in view (centred when it fits and the chat's ends allow), current, selected and painted."""
    view, model = viewer.view, viewer.model
    index = model.index(row)
    rect, area, bar = view.visualRect(index), view.viewport().rect(), view.verticalScrollBar()
    assert rect.isValid() and rect.intersects(area), (row, rect, area)
    assert painted_row(viewer, rect) == row
    if rect.height() <= area.height():
        assert area.contains(rect), (row, rect, area)
        if bar.minimum() < bar.value() < bar.maximum():  # not held at either end of the chat
            assert abs(rect.center().y() - area.center().y()) <= 2, (row, rect, area)
    else:
        assert rect.top() <= view.spacing()  # taller than the list: its start is shown
    assert view.currentIndex().row() == row
    assert view.selectionModel().isSelected(index)
    assert index.data(HighlightedRole)
    # Selected, the row is still painted in the highlight's yellow (its frame shows the selection).
    image = view.viewport().grab().toImage()
    visible = rect.intersected(area)
    yellow = sum(image.pixelColor(x, y) == HIGHLIGHT
                 for x in range(visible.left() + 4, visible.right() - 4, 7)
                 for y in range(visible.top() + 3, min(visible.bottom() - 3, visible.top() + 300), 3))
    assert yellow > 10, (row, yellow)


@pytest.mark.parametrize("name", CHATS)
def test_every_message_of_a_real_chat_can_be_scrolled_to_and_is_painted(name, chat_id_of, qtbot, services):
    """Before: dutch_friends' list stayed white (its layout started again for good: a row wider than the
    list showed a horizontal scroll bar, which laid the rows out again, without it), its scroll range was
    73 for 1,554 rows, and a 1,257-line emoji grid could not be scrolled through."""
    viewer = open_viewer(qtbot, services, chat_id_of(name))
    view, model = viewer.view, viewer.model
    bar, area = view.verticalScrollBar(), view.viewport().rect()
    assert model.rowCount() > 1000
    assert view.indexAt(QPoint(area.center().x(), view.spacing() + 1)).row() == 0  # opened at the start
    assert bar.maximum() == content_height(viewer) - area.height()  # pixels, for the whole chat
    for row in range(model.rowCount()):
        index = model.index(row)
        view.scrollTo(index)
        rect = view.visualRect(index)
        assert rect.isValid() and rect.intersects(area), (row, rect)
        assert rect.width() <= area.width()  # no row is wider than the list (no horizontal scrolling)
        assert painted_row(viewer, rect) == row, row
    tallest = max(range(model.rowCount()), key=lambda row: view.visualRect(model.index(row)).height())
    if view.visualRect(model.index(tallest)).height() > area.height():  # a long emoji grid: read to its end
        view.scrollTo(model.index(tallest), view.ScrollHint.PositionAtTop)
        bar.setValue(bar.value() + view.visualRect(model.index(tallest)).height() - area.height() // 2)
        assert painted_row(viewer, view.visualRect(model.index(tallest))) == tallest
    viewer.close()


@pytest.mark.parametrize("name", CHATS)
def test_a_viewer_opened_at_a_message_of_a_real_chat_shows_it_and_moves_to_another(name, chat_id_of, qtbot,
                                                                                   services):
    """Before: the highlighted message was current but neither selected nor, in dutch_friends, shown."""
    conn = open_store()
    ids = [row[0] for row in conn.execute("SELECT id FROM messages WHERE chat_id = ? ORDER BY ts, id",
                                          (chat_id_of(name),))]
    conn.close()
    chooser = random.Random(name)
    middle = len(ids) * 2 // 3  # past the first batches of the layout
    viewer = open_viewer(qtbot, services, chat_id_of(name), [ids[middle]])
    assert viewer.model.highlighted_rows() == [middle]
    assert_shown_at(viewer, middle)
    tallest = max(range(len(ids)), key=lambda row: viewer.view.visualRect(viewer.model.index(row)).height())
    for row in [0, len(ids) - 1, tallest, tallest + 1, *chooser.sample(range(len(ids)), 5)]:
        with qtbot.waitSignal(viewer.positioned, timeout=10_000):
            viewer.show_message(ids[row])
        assert viewer.view.layout_complete()  # moving the highlight repaints; it does not lay the rows out again
        assert viewer.model.index(row).data(MessageIdRole) == ids[row]
        assert viewer.model.highlighted_rows() == [row]
        assert_shown_at(viewer, row)
        assert len(viewer.view.selectionModel().selectedIndexes()) == 1  # the earlier one is let go
    viewer.close()
