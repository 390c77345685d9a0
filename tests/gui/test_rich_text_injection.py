"""Text from a chat or a photo's file is data: markup in a chat's name, a sender, a message or a file
name is shown as the characters it is, in every label, tooltip and card of the window."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image
from PySide6.QtCore import QSettings
from PySide6.QtGui import Qt, QTextDocument  # QtGui's Qt has mightBeRichText
from PySide6.QtWidgets import QLabel

from gallery_app.core import resources
from gallery_app.ui.chat.chat_list import ChatIdRole
from gallery_app.ui.chat.conversation import PassagesTurn
from gallery_app.ui.main_window import MODELS_OFFERED_KEY, MainWindow
from gallery_app.ui.photos import PhotoGridModel

#: A file name cannot hold "/", so the chat's name (from the file's name) has no closing tag.
TITLE = "<img src=x><b>X"
SENDER = "<img src=x><b>X</b>"
LINK = '<a href="https://example.invalid/">click here</a>'
CHAT = (f"[03/04/24, 19:40:30] {SENDER}: {LINK} for the <img src=\"y\"> hotel booking\n"
        "[03/04/24, 19:41:00] Maya: hello <b>bold</b> there, who pays for the hotel?\n"
        f"[03/04/24, 19:42:00] {SENDER}: I paid the hotel deposit\n")


def rendered(text: str, text_format: Qt.TextFormat = Qt.TextFormat.AutoText) -> QTextDocument:
    """The document Qt draws for ``text``: tooltips and AutoText labels guess rich text as Qt does."""
    document = QTextDocument()
    rich = text_format == Qt.TextFormat.RichText or (
        text_format == Qt.TextFormat.AutoText and Qt.mightBeRichText(text))
    if rich:
        document.setHtml(text)
    else:
        document.setPlainText(text)
    return document


def markup_in(document: QTextDocument) -> list[str]:
    """Images and links the document would draw (there must be none from chat text)."""
    found = []
    block = document.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            if fragment.charFormat().isImageFormat():
                found.append(f"image {fragment.charFormat().toImageFormat().name()}")
            if fragment.charFormat().isAnchor():
                found.append(f"link {fragment.charFormat().anchorHref()}")
            it += 1
        block = block.next()
    return found


def assert_literal(text: str, expected: str, text_format: Qt.TextFormat = Qt.TextFormat.AutoText) -> None:
    document = rendered(text, text_format)
    assert expected in document.toPlainText().replace("\u2029", "\n"), (text, document.toPlainText())
    assert markup_in(document) == [], text


def assert_label(label: QLabel, expected: str) -> None:
    assert_literal(label.text(), expected, label.textFormat())


@pytest.fixture
def window(qtbot):
    QSettings().setValue(MODELS_OFFERED_KEY, True)
    main = MainWindow()
    qtbot.addWidget(main)
    with qtbot.waitSignals([main.demo_ready, main.models_checked], timeout=120_000):
        main.show()
    yield main
    main.close()


def test_markup_in_a_chat_shows_as_text_in_the_list_viewer_and_answer(window, qtbot, tmp_path):
    """Before: the viewer's header drew the chat's name as an image and bold text; so did the chat list's
    and the messages' tooltips."""
    export = tmp_path / f"WhatsApp Chat with {TITLE}.txt"
    export.write_text(CHAT, "utf-8")
    window.open_paths([export])
    pane = window.chat_pane
    demo = len(resources.demo_chat_files())
    qtbot.waitUntil(lambda: pane.chat_model.rowCount() == demo + 1, timeout=60_000)
    assert_label(window.task_bar.label, f"Importing {export.name}")

    row = next(r for r, chat in enumerate(pane.chat_model.chats()) if chat.title == TITLE)
    index = pane.chat_model.index(row)
    assert_literal(index.data(Qt.ItemDataRole.ToolTipRole), f"{TITLE} (3 messages")
    assert_literal(index.data(Qt.ItemDataRole.ToolTipRole), SENDER)

    # Double-click the chat: the viewer opens with its header and every message as they are.
    pane.chat_list.scrollTo(index)
    where = pane.chat_list.visualRect(index).center()
    with qtbot.waitSignal(pane.viewer_opened, timeout=10_000) as opened:
        qtbot.mousePress(pane.chat_list.viewport(), Qt.MouseButton.LeftButton, pos=where)  # a double-click
        qtbot.mouseRelease(pane.chat_list.viewport(), Qt.MouseButton.LeftButton, pos=where)  # is press,
        qtbot.mouseDClick(pane.chat_list.viewport(), Qt.MouseButton.LeftButton, pos=where)  # release, double
    viewer = opened.args[0]
    qtbot.waitUntil(lambda: viewer.model.rowCount() == 3, timeout=10_000)
    assert_label(viewer.header, TITLE)
    assert_label(viewer.header, SENDER)
    first = viewer.model.index(0)
    assert_literal(first.data(Qt.ItemDataRole.ToolTipRole), f"{SENDER}: {LINK} for the <img src=\"y\"> hotel")
    assert f"{SENDER}: {LINK}" in first.data()  # the list draws its rows as plain text
    viewer.close()

    # Ask about this chat only: the passage cards and the answer show the sender and the link as text.
    selection = pane.chat_list.selectionModel()
    selection.select(index, selection.SelectionFlag.ClearAndSelect)
    assert pane.selected_chat_ids() == [index.data(ChatIdRole)]
    worker = pane.ask("Who paid the hotel deposit?")
    with qtbot.waitSignal(worker.signals.finished, timeout=120_000):
        pass
    cards = [card for turn in pane.view.turns if isinstance(turn, PassagesTurn) for card in turn.cards]
    assert cards
    for card in cards:
        assert_label(card.heading, TITLE)
    assert any(SENDER in rendered(card.lines.text(), card.lines.textFormat()).toPlainText() for card in cards)
    for card in cards:
        assert markup_in(rendered(card.lines.text(), card.lines.textFormat())) == []
    answer = pane.view.turns[-1]
    for label in answer.findChildren(QLabel):
        document = rendered(label.text(), label.textFormat())
        assert not [found for found in markup_in(document) if not found.startswith("link cite:")], label.text()


def test_markup_in_a_photo_file_name_shows_as_text_in_the_grid_and_viewer(window, qtbot, tmp_path):
    folder = tmp_path / "photos"
    folder.mkdir()
    name = f"{TITLE}.png"
    Image.new("RGB", (64, 48), (200, 30, 90)).save(folder / name)
    pane = window.photo_pane
    with qtbot.waitSignal(pane.folder_added, timeout=60_000):
        window.open_paths([folder])
    qtbot.waitUntil(lambda: any(photo.name == name for photo in pane.model.photos()), timeout=10_000)
    photo = next(photo for photo in pane.model.photos() if photo.name == name)
    index = pane.model.index_of(photo.id)  # the grid's rows also hold month headers
    assert_literal(index.data(Qt.ItemDataRole.ToolTipRole), name)
    viewer = pane.open_viewer(index.data(PhotoGridModel.PhotoRole))
    with qtbot.waitSignal(viewer.image_loaded, timeout=10_000):
        pass
    assert_label(viewer.fields["Path"], str(Path(folder / name)))
    for label in viewer.fields.values():
        assert markup_in(rendered(label.text(), label.textFormat())) == []
    viewer.close()


def test_a_file_name_that_is_not_utf8_is_shown_with_its_byte_written_out():
    """Before: the grid tooltip, the viewer's Path and the duplicates list gave Qt the lone surrogate, and
    Qt dropped it: `caf\\xe9.jpg` on disk read as `caf.jpg`."""
    import os

    from gallery_app.core.photos.library import PhotoRecord
    from gallery_app.ui.photos.grid_model import describe_photo
    from gallery_app.ui.photos.viewer import photo_metadata

    path = os.fsdecode(b"/pics/caf\xe9.jpg")
    photo = PhotoRecord(id=1, path=path, folder_id=None, source="folder", content_hash="0" * 64, file_size=10,
                        mtime_ns=0, width=2, height=2, format="JPEG", captured_at=None, latitude=None,
                        longitude=None, camera=None, taken_at="2024-05-18T16:02:00")
    assert "/pics/caf\\xe9.jpg" in describe_photo(photo)
    assert ("Path", "/pics/caf\\xe9.jpg") in photo_metadata(photo)
