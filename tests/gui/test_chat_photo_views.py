"""A photo sent in a chat, seen from both sides: its large view says who sent it, when and with which
words, and *Open in chat* opens the chat at that message; the chat viewer draws the photo's thumbnail
in place of "<attached: NAME>". Each test imports a small export it writes (a _chat.txt and a JPEG)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from PIL import Image
from PySide6.QtCore import QItemSelectionModel, QRect, QSettings, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QStyleOptionViewItem

from gallery_app.core.chat.importer import import_chat
from gallery_app.core.chat.repository import chat_messages
from gallery_app.core.chat.whatsapp import attachment_caption, parse_chat_text
from gallery_app.core.photos import library
from gallery_app.core.photos.indexer import PhotoIndexer
from gallery_app.core.store import open_store
from gallery_app.ui.chat.viewer import PHOTO_NOTE, ChatViewer, HighlightedRole, MessageIdRole, PhotoRole
from gallery_app.ui.photos.viewer import PhotoViewer
from tests.text_embedders import WordHashEmbedder

PHOTO = "00000002-PHOTO-2024-05-18-16-02-10.jpg"
VIDEO = "00000003-VIDEO-2024-05-18-16-03-00.mp4"
# The names, the title and the caption carry markup: they are data, shown as typed.
TITLE = "Weekend <b>away</b>"
CHAT = (
    "[18/05/2024, 15:58:02] <b>Maya</b>: We made it to the cottage\n"
    f"[18/05/2024, 16:02:10] <b>Maya</b>: <attached: {PHOTO}> <i>view</i> from the cottage\n"
    f"[18/05/2024, 16:03:00] Daniel: <attached: {VIDEO}>\n"
    "[18/05/2024, 16:05:00] Daniel: Wow, jealous\n"
)
SENT_BY = ("Sent by <b>Maya</b> in “Weekend <b>away</b>” on Sat 18 May 2024, 16:02"
           " — “<i>view</i> from the cottage”")
RED = (220, 30, 30)


def _jpeg(colour=RED) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (96, 64), colour).save(out, "JPEG", quality=95)
    return out.getvalue()


def _import(tmp_path: Path, name: str, chat: str, members: dict[str, bytes], title: str) -> int:
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("_chat.txt", chat)
        for member, data in members.items():
            zf.writestr(member, data)
    conn = open_store()
    try:
        return import_chat(conn, path, WordHashEmbedder(), title=title).chat_id
    finally:
        conn.close()


@pytest.fixture
def weekend(tmp_path):
    """(chat id, the photo's PhotoRecord, the id of the message that attached it)."""
    chat_id = _import(tmp_path, "weekend.zip", CHAT, {PHOTO: _jpeg(), VIDEO: b"\x00\x00\x00\x18ftypmp42"}, TITLE)
    conn = open_store()
    try:
        [photo] = library.list_photos(conn)
        message = next(m for m in chat_messages(conn, chat_id) if m.attachment == PHOTO)
    finally:
        conn.close()
    return chat_id, photo, message.id


def _photo_viewer(qtbot, services, photo) -> PhotoViewer:
    viewer = PhotoViewer(services, photo)
    qtbot.addWidget(viewer)
    with qtbot.waitSignal(viewer.chat_context_loaded, timeout=10_000):
        viewer.show()
    return viewer


def _chat_viewer(qtbot, services, chat_id, highlight=()) -> ChatViewer:
    viewer = ChatViewer(services, chat_id, highlight, title="Weekend")
    qtbot.addWidget(viewer)
    viewer.resize(800, 600)
    with qtbot.waitSignal(viewer.loaded, timeout=10_000):
        viewer.show()
    return viewer


def _row_of(viewer: ChatViewer, message_id: int) -> int:
    return next(r for r in range(viewer.model.rowCount()) if viewer.model.index(r).data(MessageIdRole) == message_id)


def _thumbnail_rect(viewer: ChatViewer, row: int) -> QRect:
    """Where the row's thumbnail is drawn in the view's viewport (as the delegate lays it out)."""
    option = QStyleOptionViewItem()
    option.initFrom(viewer.view)
    option.rect = viewer.view.visualRect(viewer.model.index(row))
    option.decorationSize = viewer.view.iconSize()
    return viewer.delegate.photo_rect(option, viewer.model.index(row))


def _pixel_at_thumbnail(viewer: ChatViewer, row: int) -> tuple[int, int, int]:
    colour = viewer.view.viewport().grab().toImage().pixelColor(_thumbnail_rect(viewer, row).center())
    return colour.red(), colour.green(), colour.blue()


def _reddish(rgb) -> bool:
    red, green, blue = rgb
    return red > 180 and green < 80 and blue < 80


def test_the_large_view_of_a_chat_photo_says_who_sent_it_where_when_and_why(qtbot, services, weekend):
    _chat_id, photo, _message_id = weekend
    viewer = _photo_viewer(qtbot, services, photo)
    assert viewer.sent_row.isVisible() and viewer.open_in_chat_button.isVisible()
    assert viewer.sent_line.text() == SENT_BY  # markup in the sender, title and caption shown literally
    assert viewer.sent_line.textFormat() == Qt.TextFormat.PlainText
    assert not viewer.also_line.isVisible() and viewer.open_in_chat_button.menu() is None
    viewer.close()


def test_a_photo_no_chat_sent_has_no_sent_by_line(qtbot, services, tmp_path, weekend):
    folder = tmp_path / "folder"
    folder.mkdir()
    Image.new("RGB", (80, 60), (20, 120, 220)).save(folder / "lake.png")
    conn = open_store()
    try:
        PhotoIndexer(conn, None).add_folder(folder)
        lake = next(p for p in library.list_photos(conn) if p.name == "lake.png")
    finally:
        conn.close()
    viewer = _photo_viewer(qtbot, services, lake)
    assert not viewer.sent_row.isVisible() and viewer.sent == []
    viewer.close()


def test_a_photo_sent_twice_offers_both_messages(qtbot, services, tmp_path, weekend):
    chat_id, photo, message_id = weekend
    forwarded = "[20/05/2024, 09:00:00] Priya: <attached: 00000001-PHOTO-2024-05-20-09-00-00.jpg>\n"
    same_photo = {"00000001-PHOTO-2024-05-20-09-00-00.jpg": _jpeg()}  # its content is already in the gallery
    other_chat = _import(tmp_path, "club.zip", forwarded, same_photo, "Book club")
    viewer = _photo_viewer(qtbot, services, photo)
    assert viewer.sent_line.text() == SENT_BY  # the first message that sent it
    assert viewer.also_line.isVisible() and viewer.also_line.text() == "Also sent in 1 other message."
    actions = viewer.open_in_chat_button.menu().actions()
    assert [a.text() for a in actions] == ["<b>Maya</b> in “Weekend <b>away</b>”, Sat 18 May 2024, 16:02",
                                           "Priya in “Book club”, Mon 20 May 2024, 09:00"]
    with qtbot.waitSignal(viewer.open_in_chat, timeout=5_000) as chosen:
        actions[1].trigger()
    assert (chosen.args[0].chat_id, chosen.args[0].sender) == (other_chat, "Priya")
    assert chosen.args[0].chat_id != chat_id and chosen.args[0].message_id != message_id
    assert not viewer.isVisible()


def _window_without_demo(qtbot, monkeypatch):
    """The main window on the test's chat alone: the demo data and the model check are other tests' subjects."""
    from gallery_app.ui import main_window

    monkeypatch.setattr(main_window, "prepare_demo", lambda *args, **kwargs: [])
    monkeypatch.setattr(main_window, "check_and_advise", lambda settings: ([], []))
    QSettings().setValue(main_window.MODELS_OFFERED_KEY, True)
    window = main_window.MainWindow()
    qtbot.addWidget(window)
    with qtbot.waitSignal(window.demo_ready, timeout=10_000):
        window.show()
    return window


def test_open_in_chat_opens_the_chat_tab_at_the_message_that_sent_the_photo(qtbot, weekend, monkeypatch):
    chat_id, photo, message_id = weekend
    window = _window_without_demo(qtbot, monkeypatch)
    window.tabs.setCurrentWidget(window.photo_pane)
    photo_view = window.photo_pane.open_viewer(photo)
    qtbot.waitUntil(lambda: photo_view.open_in_chat_button.isVisible(), timeout=10_000)
    with qtbot.waitSignal(window.chat_pane.viewer_opened, timeout=5_000) as opened:
        qtbot.mouseClick(photo_view.open_in_chat_button, Qt.MouseButton.LeftButton)
    chat_view = opened.args[0]
    assert window.tabs.currentWidget() is window.chat_pane and not photo_view.isVisible()
    qtbot.waitUntil(lambda: chat_view.is_loaded, timeout=10_000)
    assert chat_view.chat_id == chat_id
    row = _row_of(chat_view, message_id)
    assert chat_view.model.highlighted_rows() == [row]
    assert chat_view.view.currentIndex().row() == row and chat_view.view.currentIndex().data(HighlightedRole)
    assert PHOTO_NOTE in chat_view.header.text()
    qtbot.waitUntil(lambda: chat_view.view.viewport().rect().intersects(
        chat_view.view.visualRect(chat_view.model.index(row))), timeout=5_000)
    window.close()


def test_the_chat_viewer_shows_the_photo_in_place_of_its_attachment_name(qtbot, services, weekend):
    chat_id, photo, message_id = weekend
    viewer = _chat_viewer(qtbot, services, chat_id)
    lines = [viewer.model.index(r).data() for r in range(viewer.model.rowCount())]
    row = _row_of(viewer, message_id)
    assert lines[row] == "18 May 2024 16:02 · <b>Maya</b>: <i>view</i> from the cottage"  # the caption stays
    assert viewer.model.index(row).data(PhotoRole).id == photo.id
    assert f"<attached: {VIDEO}>" in lines[row + 1]  # another attachment keeps its name
    assert viewer.model.index(row + 1).data(PhotoRole) is None
    assert viewer.model.photo_rows() == [row]
    # The thumbnail is decoded off the GUI thread, then drawn where the name was.
    qtbot.waitUntil(lambda: _reddish(_pixel_at_thumbnail(viewer, row)), timeout=10_000)
    assert viewer.model.thumbnails.loaded == 1
    # Copying and the tooltip give the message as the export wrote it, with the file's name.
    viewer.view.selectionModel().select(viewer.model.index(row), QItemSelectionModel.SelectionFlag.Select)
    viewer.copy_selected()
    assert PHOTO in QGuiApplication.clipboard().text()
    assert PHOTO in viewer.model.index(row).data(Qt.ItemDataRole.ToolTipRole)
    viewer.close()


def test_clicking_the_thumbnail_opens_the_photo_whose_open_in_chat_comes_back_to_the_message(
        qtbot, services, weekend):
    chat_id, photo, message_id = weekend
    viewer = _chat_viewer(qtbot, services, chat_id)
    row = _row_of(viewer, message_id)
    viewer.view.scrollTo(viewer.model.index(row))
    assert viewer.model.highlighted_rows() == []
    with qtbot.waitSignal(viewer.photo_opened, timeout=5_000) as opened:
        qtbot.mouseClick(viewer.view.viewport(), Qt.MouseButton.LeftButton, pos=_thumbnail_rect(viewer, row).center())
    photo_view = opened.args[0]
    assert photo_view.photo.id == photo.id
    # A double-click (a click, then an activation) keeps the one large view open, not three in a row.
    qtbot.mouseDClick(viewer.view.viewport(), Qt.MouseButton.LeftButton, pos=_thumbnail_rect(viewer, row).center())
    assert viewer.photo_viewer is photo_view and photo_view.isVisible()
    qtbot.waitUntil(lambda: photo_view.open_in_chat_button.isVisible(), timeout=10_000)
    qtbot.mouseClick(photo_view.open_in_chat_button, Qt.MouseButton.LeftButton)
    assert viewer.model.highlighted_rows() == [row] and PHOTO_NOTE in viewer.header.text()
    assert not photo_view.isVisible()
    viewer.close()


@pytest.mark.parametrize("export", [
    f"[18/05/2024, 16:02:10] Maya: <attached: {PHOTO}> view from the cottage",
    f"[18/05/2024, 16:02:10] Maya: <attached: {PHOTO}>\nview from\nthe cottage",
    f"[18/05/2024, 16:02:10] Maya: <attached: {PHOTO}>",
    "18/05/2024, 16:02 - Maya: IMG-20240518-WA0001.jpg (file attached)\nview from the cottage",
    f"[18/05/2024, 16:02:10] Maya: <attached: {PHOTO}> view <This message was edited>",
])
def test_the_words_beside_a_thumbnail_are_the_caption_the_parser_read(export):
    [message] = parse_chat_text(export).messages
    assert message.attachment and attachment_caption(message.text) == message.caption


def test_open_in_chat_for_a_message_a_longer_export_added_reads_the_chat_again(qtbot, weekend, monkeypatch, tmp_path):
    """Before: the viewer already open on the chat was reused as it was read, so the new message was not there
    and nothing was highlighted."""
    from gallery_app.core.photos.chat_photos import chat_context

    chat_id, photo, message_id = weekend
    window = _window_without_demo(qtbot, monkeypatch)
    first = window.chat_pane.open_viewer(chat_id, [message_id], TITLE, note=PHOTO_NOTE)
    qtbot.waitUntil(lambda: first.is_loaded, timeout=10_000)
    later = "00000009-PHOTO-2024-05-19-10-00-00.jpg"
    longer = CHAT + f"[19/05/2024, 10:00:00] Daniel: <attached: {later}> breakfast\n"
    _import(tmp_path, "weekend-longer.zip", longer, {PHOTO: _jpeg(), later: _jpeg((20, 200, 20))}, TITLE)
    conn = open_store()
    try:
        new_photo = next(p for p in library.list_photos(conn) if p.name == later)
        sent = chat_context(conn, [new_photo.id])[new_photo.id][0]
    finally:
        conn.close()
    viewer = window.chat_pane.show_chat_photo(sent)
    qtbot.waitUntil(lambda: viewer.is_loaded, timeout=10_000)
    row = _row_of(viewer, sent.message_id)
    assert row >= 0 and viewer.model.highlighted_rows() == [row]
    window.close()
