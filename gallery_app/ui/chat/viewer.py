"""A whole chat, read-only, scrolled to a passage (or one message) with its messages highlighted.

A message whose photo is in the gallery shows the photo's thumbnail in place of its "<attached: NAME>"
(its caption stays); clicking the thumbnail opens the photo's large view. Thumbnails are decoded off the
GUI thread, and only for the rows the view paints.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from PySide6.QtCore import QAbstractListModel, QEvent, QItemSelection, QItemSelectionModel, QModelIndex, \
    QPersistentModelIndex, QPoint, QRect, QSize, Qt, QTimerEvent, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QGuiApplication, QIcon, QKeySequence, QMouseEvent, QPalette, \
    QShortcut
from PySide6.QtWidgets import QAbstractItemView, QApplication, QDialog, QDialogButtonBox, QLabel, QListView, \
    QStyle, QStyledItemDelegate, QStyleOptionViewItem, QVBoxLayout

from gallery_app.core.chat.messages import MessageKind
from gallery_app.core.chat.repository import StoredMessage
from gallery_app.core.chat.whatsapp import attachment_caption
from gallery_app.core.errors import AppError
from gallery_app.core.photos.chat_photos import ChatPhoto
from gallery_app.core.photos.library import PhotoRecord
from gallery_app.ui.chat import jobs
from gallery_app.ui.photos.thumbnails import ThumbnailLoader
from gallery_app.ui.photos.viewer import PhotoViewer
from gallery_app.ui.plain_text import escape, tooltip
from gallery_app.ui.workers import Worker

MessageIdRole = Qt.ItemDataRole.UserRole + 1
HighlightedRole = Qt.ItemDataRole.UserRole + 2
#: The PhotoRecord a message sent, when it is in the gallery (else None).
PhotoRole = Qt.ItemDataRole.UserRole + 3
HIGHLIGHT = QColor(255, 236, 153)
#: A thumbnail's side in the chat: big enough to recognise the photo, small beside the messages.
THUMBNAIL_SIDE = 128
#: What the header says of the highlighted message when the viewer opened at a photo's message.
PHOTO_NOTE = "The highlighted message sent the photo."
#: The room between rows, where a selected highlighted row's frame is drawn (outside its text).
ROW_SPACING = 2
#: The roles the model answers; the view asks each row for eight while it lays out tens of thousands.
_ROLES = frozenset((Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole, Qt.ItemDataRole.BackgroundRole,
                    Qt.ItemDataRole.ForegroundRole, Qt.ItemDataRole.FontRole, Qt.ItemDataRole.DecorationRole,
                    MessageIdRole, HighlightedRole, PhotoRole))
#: Roles whose change leaves every row's size as it was (the thumbnail's room is the placeholder's).
_PAINT_ONLY_ROLES = frozenset((Qt.ItemDataRole.DecorationRole, Qt.ItemDataRole.BackgroundRole,
                               Qt.ItemDataRole.ForegroundRole, HighlightedRole))
#: Characters without a space after which a line may break: word wrap cannot break "10&8&14&4&15&…" (a
#: game's results), and a row wider than the list brings a horizontal scroll bar back.
BREAK_RUN = 30
_LONG_RUN = re.compile(r"\S{%d,}" % (BREAK_RUN + 1))
_ZERO_WIDTH_SPACE = "\u200b"


def _joins_previous(char: str) -> bool:
    """A character drawn as one with the one before it (accents, emoji modifiers, ZWJ sequences)."""
    return (unicodedata.category(char).startswith("M") or char in "\u200d\ufe0e\ufe0f"
            or "\U0001f3fb" <= char <= "\U0001f3ff")


def _break_run(match: re.Match) -> str:
    run, pieces, start = match.group(), [], 0
    at = BREAK_RUN
    while at < len(run):
        while at < len(run) and (_joins_previous(run[at]) or run[at - 1] == "\u200d"):
            at += 1
        if at < len(run):
            pieces.append(run[start:at])
            start = at
        at += BREAK_RUN
    pieces.append(run[start:])
    return _ZERO_WIDTH_SPACE.join(pieces)


def breakable(text: str) -> str:
    """``text`` as shown: an invisible break opportunity every BREAK_RUN characters of a run without spaces."""
    return _LONG_RUN.sub(_break_run, text) if len(text) > BREAK_RUN else text


def message_line(message: StoredMessage) -> str:
    """The message as the export wrote it (what is copied, and the tooltip)."""
    when = f"{message.timestamp:%d %b %Y %H:%M}"
    if message.kind is MessageKind.SYSTEM or not message.sender:
        return f"{when} · {message.text}"
    return f"{when} · {message.sender}: {message.text}"


def photo_message_line(message: StoredMessage) -> str:
    """A message whose photo is drawn beside it: its caption without the "<attached: NAME>"."""
    caption = attachment_caption(message.text)
    if caption is None:  # no marker found (cannot happen for a linked photo): the text as it is
        return message_line(message)
    when = f"{message.timestamp:%d %b %Y %H:%M}"
    who = message.sender or "Someone"
    return f"{when} · {who}: {caption}" if caption else f"{when} · {who}"


class MessageListModel(QAbstractListModel):
    def __init__(self, parent=None, *, thumbnail_side: int = THUMBNAIL_SIDE):
        super().__init__(parent)
        self._messages: list[StoredMessage] = []
        self._highlighted: set[int] = set()
        self._photos: dict[int, PhotoRecord] = {}  # message id → photo
        self._photo_lines: dict[int, str] = {}  # message id → its line beside the thumbnail
        self._rows_of_photo: dict[int, list[int]] = {}  # photo id → rows (one photo may be sent twice)
        self.thumbnails = ThumbnailLoader(thumbnail_side, self)
        self.thumbnails.ready.connect(self._thumbnail_changed)
        self.thumbnails.failed.connect(lambda key, _why: self._thumbnail_changed(key))

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._messages)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if role not in _ROLES or not index.isValid() or not 0 <= index.row() < len(self._messages):
            return None
        message = self._messages[index.row()]
        highlighted = message.id in self._highlighted
        if role == Qt.ItemDataRole.DisplayRole:
            line = self._photo_lines.get(message.id)
            return line if line is not None else message_line(message)
        if role == Qt.ItemDataRole.ToolTipRole:
            hint = "\nClick the photo to see it large." if message.id in self._photos else ""
            return tooltip(message_line(message) + hint)
        if role == Qt.ItemDataRole.DecorationRole:
            # Only the room a thumbnail takes: laying out every row must not load every photo, so the
            # delegate asks for the thumbnail itself when it paints the row (``thumbnail``).
            return self.thumbnails.placeholder if message.id in self._photos else None
        if role == Qt.ItemDataRole.BackgroundRole and highlighted:
            return QBrush(HIGHLIGHT)
        if role == Qt.ItemDataRole.ForegroundRole and highlighted:
            return QBrush(QColor(0, 0, 0))
        if role == Qt.ItemDataRole.FontRole and message.kind is MessageKind.SYSTEM:
            font = QFont()
            font.setItalic(True)
            return font
        if role == MessageIdRole:
            return message.id
        if role == HighlightedRole:
            return highlighted
        if role == PhotoRole:
            return self._photos.get(message.id)
        return None

    def set_messages(self, messages: list[StoredMessage], highlighted: Iterable[int] = (),
                     photos: dict[int, PhotoRecord] | None = None) -> None:
        self.beginResetModel()
        self._messages = list(messages)
        self._highlighted = set(highlighted)
        self._photos = dict(photos or {})
        by_id = {message.id: message for message in self._messages if message.id in self._photos}
        self._photo_lines = {message_id: photo_message_line(message) for message_id, message in by_id.items()}
        self._rows_of_photo = {}
        for row, message in enumerate(self._messages):
            if message.id in self._photos:
                self._rows_of_photo.setdefault(self._photos[message.id].id, []).append(row)
        self.thumbnails.drop_queued()
        self.endResetModel()

    def set_highlighted(self, highlighted: Iterable[int]) -> None:
        self._highlighted = set(highlighted)
        if self._messages:
            self.dataChanged.emit(self.index(0), self.index(len(self._messages) - 1),
                                  [Qt.ItemDataRole.BackgroundRole, Qt.ItemDataRole.ForegroundRole, HighlightedRole])

    def highlighted_rows(self) -> list[int]:
        return [row for row, message in enumerate(self._messages) if message.id in self._highlighted]

    def row_of_message(self, message_id: int) -> int:
        return next((row for row, message in enumerate(self._messages) if message.id == message_id), -1)

    def exported_line(self, row: int) -> str:
        return message_line(self._messages[row])

    def photo_rows(self) -> list[int]:
        return sorted(row for rows in self._rows_of_photo.values() for row in rows)

    def thumbnail(self, row: int) -> QIcon:
        """The row's photo thumbnail once decoded; until then the placeholder, and it is requested."""
        photo = self._photos[self._messages[row].id]
        return self.thumbnails.icon(photo.id, photo.path, photo.content_hash)

    def _thumbnail_changed(self, photo_id: int) -> None:
        for row in self._rows_of_photo.get(photo_id, ()):
            index = self.index(row)
            self.dataChanged.emit(index, index, [Qt.ItemDataRole.DecorationRole])


class MessageDelegate(QStyledItemDelegate):
    """Paints a photo message with its thumbnail, and tells when that thumbnail is clicked."""

    photo_clicked = Signal(int)  # the row

    def initStyleOption(self, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        super().initStyleOption(option, index)
        option.text = breakable(option.text)  # what is drawn and measured; the model keeps the message's text

    def paint(self, painter, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        photo = index.data(PhotoRole) is not None
        marked = bool(option.state & QStyle.StateFlag.State_Selected) and index.data(HighlightedRole)
        if not photo and not marked:
            super().paint(painter, option, index)
            return
        styled = self._styled(option, index)
        if photo:
            styled.icon = index.model().thumbnail(index.row())
        if marked:
            # The selection's colour (and the focus rectangle's tint) would hide the highlight: a selected
            # highlighted row keeps its yellow and shows the selection as a frame.
            styled.state &= ~(QStyle.StateFlag.State_Selected | QStyle.StateFlag.State_HasFocus)
        style = styled.widget.style() if styled.widget is not None else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, styled, painter, styled.widget)
        if marked:
            rect, side, colour = option.rect, ROW_SPACING, option.palette.color(QPalette.ColorRole.Highlight)
            for strip in (QRect(rect.left() - side, rect.top() - side, rect.width() + 2 * side, side),
                          QRect(rect.left() - side, rect.bottom() + 1, rect.width() + 2 * side, side),
                          QRect(rect.left() - side, rect.top(), side, rect.height()),
                          QRect(rect.right() + 1, rect.top(), side, rect.height())):
                painter.fillRect(strip, colour)

    def photo_rect(self, option: QStyleOptionViewItem, index: QModelIndex) -> QRect:
        """Where the thumbnail is drawn inside the row ``option.rect``."""
        styled = self._styled(option, index)
        style = styled.widget.style() if styled.widget is not None else QApplication.style()
        return style.subElementRect(QStyle.SubElement.SE_ItemViewItemDecoration, styled, styled.widget)

    def editorEvent(self, event: QEvent, model, option: QStyleOptionViewItem, index: QModelIndex) -> bool:
        if (event.type() == QEvent.Type.MouseButtonRelease and isinstance(event, QMouseEvent)
                and event.button() == Qt.MouseButton.LeftButton and index.data(PhotoRole) is not None
                and self.photo_rect(option, index).contains(event.position().toPoint())):
            self.photo_clicked.emit(index.row())
            return True
        return super().editorEvent(event, model, option, index)

    def _styled(self, option: QStyleOptionViewItem, index: QModelIndex) -> QStyleOptionViewItem:
        styled = QStyleOptionViewItem(option)
        self.initStyleOption(styled, index)
        return styled


class MessageListView(QListView):
    """The messages, one wrapped row each, laid out in batches, scrolled by pixels.

    QListView lays every row out again whenever its width or height changes (word wrap) and on any
    dataChanged, and paints nothing until such a layout has reached the last row. So nothing here may
    change the viewport's size by itself (both scroll bars keep their place), a new thumbnail or highlight
    only repaints, and the row at the top stays there across a new layout (a resize)."""

    #: The layout reached the last row (after new messages, or a new layout after a resize).
    laid_out = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self._complete = False
        self._anchor: tuple[QPersistentModelIndex, int] | None = None  # the top row and its y, kept across layouts
        self.setWordWrap(True)
        self.setUniformItemSizes(False)
        self.setResizeMode(QListView.ResizeMode.Adjust)
        # A years-long chat (tens of thousands of messages) measured at once would freeze the window for
        # seconds; batches let the event loop run in between.
        self.setLayoutMode(QListView.LayoutMode.Batched)
        self.setBatchSize(100)
        # By item, a message taller than the list (a game's 1,000-line emoji grid) cannot be read past its
        # first screen, and the scroll range counts rows the layout has not reached as nothing.
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.verticalScrollBar().setSingleStep(self.fontMetrics().lineSpacing())
        # A scroll bar that comes and goes resizes the viewport, which starts the layout again from the
        # first row, which takes the bar away again: the list stayed blank for good.
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSpacing(ROW_SPACING)

    def layout_complete(self) -> bool:
        """Every row has its place (so every row can be scrolled to and is painted)."""
        return self._complete

    def _last_row_placed(self) -> bool:
        rows = self.model().rowCount() if self.model() is not None else 0
        return rows == 0 or self.visualRect(self.model().index(rows - 1, 0)).isValid()

    def reset(self) -> None:
        self._complete, self._anchor = False, None
        super().reset()

    def selectionChanged(self, selected, deselected) -> None:
        super().selectionChanged(selected, deselected)
        self.viewport().update()  # a selected highlighted row's frame lies outside the row Qt repaints

    def dataChanged(self, top_left, bottom_right, roles=()) -> None:
        if roles and _PAINT_ONLY_ROLES.issuperset(roles):
            QAbstractItemView.dataChanged(self, top_left, bottom_right, roles)  # a repaint, not a new layout
        else:
            super().dataChanged(top_left, bottom_right, roles)

    def doItemsLayout(self) -> None:
        if self._complete and self._anchor is None:
            top = self.indexAt(QPoint(self.viewport().width() // 2, self.spacing()))
            if top.isValid():
                self._anchor = (QPersistentModelIndex(top), self.visualRect(top).top())
        self._complete = False
        super().doItemsLayout()
        self._check_complete()

    def timerEvent(self, event: QTimerEvent) -> None:
        super().timerEvent(event)  # QListView lays out its next batch on a timer
        if not self._complete:
            self._check_complete()

    def _check_complete(self) -> None:
        if self._complete or not self._last_row_placed():
            return
        self._complete = True
        anchor, self._anchor = self._anchor, None
        if anchor is not None and anchor[0].isValid():
            rect = self.visualRect(QModelIndex(anchor[0]))
            bar = self.verticalScrollBar()
            bar.setValue(bar.value() + rect.top() - anchor[1])
        self.laid_out.emit()


class ChatViewer(QDialog):
    """Opens at once with "Loading…"; the messages are read in a worker and shown when they arrive.

    ``note`` says what the highlighted messages are (by default: the passage that was found)."""

    #: Emitted once the messages are in the list (``positioned`` follows when every row is laid out).
    loaded = Signal()
    #: The list shows the highlighted messages, centred, or the chat's start when none is: after opening,
    #: and after each ``show_message``.
    positioned = Signal()
    #: A photo's large view was opened from its thumbnail (the PhotoViewer).
    photo_opened = Signal(object)
    #: *Open in chat* in a photo's large view named a message of another chat (the ChatPhoto).
    open_in_chat = Signal(object)
    #: "Similar photos" in a photo's large view (the photo id): the gallery shows them.
    similar_requested = Signal(int)

    def __init__(self, services, chat_id: int, highlight: Iterable[int] = (), *, title: str = "",
                 note: str | None = None, parent=None):
        super().__init__(parent)
        self.services = services
        self.chat_id = chat_id
        self.highlight = list(highlight)
        self.note = note
        self.chat = None
        self.is_loaded = False
        self.photo_viewer: PhotoViewer | None = None
        self.setWindowTitle(title or "Chat")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, False)
        self.resize(720, 640)

        self.header = QLabel("Loading the chat…")
        self.header.setTextFormat(Qt.TextFormat.RichText)  # the title in bold; everything in it escaped
        self.header.setWordWrap(True)
        self.header.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.model = MessageListModel(self)
        self.view = MessageListView()
        self.view.setModel(self.model)
        self.delegate = MessageDelegate(self.view)
        self.delegate.photo_clicked.connect(self.open_photo)
        self.view.setItemDelegate(self.delegate)
        self.view.setIconSize(QSize(THUMBNAIL_SIDE, THUMBNAIL_SIDE))
        self.view.activated.connect(lambda index: self.open_photo(index.row()) if index.data(PhotoRole) else None)
        self._pending_scroll: list[int] | None = None  # the rows to show once the layout reaches them
        self.view.laid_out.connect(self._scroll_to_passage)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.view.setAlternatingRowColors(False)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        copy_button = buttons.addButton("Copy selected", QDialogButtonBox.ButtonRole.ActionRole)
        copy_button.clicked.connect(self.copy_selected)
        QShortcut(QKeySequence.StandardKey.Copy, self.view, self.copy_selected)

        layout = QVBoxLayout(self)
        layout.addWidget(self.header)
        layout.addWidget(self.view, 1)
        layout.addWidget(buttons)

        worker = Worker(jobs.load_chat, services, chat_id)
        worker.signals.result.connect(self._show)
        worker.signals.error.connect(self._failed)
        self.worker = services.run(worker)

    def _show(self, contents: jobs.ChatContents) -> None:
        self.chat, self.is_loaded = contents.chat, True
        self.model.set_messages(contents.messages, self.highlight, contents.photos)
        self._pending_scroll = []  # the chat's start, unless a highlight says otherwise
        self._show_highlight()
        self.view.setFocus()
        self.loaded.emit()

    def show_message(self, message_id: int, note: str | None = None) -> None:
        """Highlight one message of this chat instead and scroll to it (the chat stays loaded)."""
        self.highlight, self.note = [message_id], note
        if self.is_loaded:  # else the messages, once read, are shown at this one
            self.model.set_highlighted(self.highlight)
            self._show_highlight()
        self.raise_()
        self.activateWindow()

    def _show_highlight(self) -> None:
        rows = self.model.highlighted_rows()
        if self.chat is None:
            self.header.setText("This chat is no longer in the library.")
        else:
            marked = len(rows)
            note = self.note or ("The highlighted message is the one that was found." if marked == 1
                                 else f"The {marked} highlighted messages are the passage that was found.")
            self.header.setText(f"<b>{escape(self.chat.title)}</b> — "
                                f"{escape(self.chat.describe().split('(', 1)[-1].rstrip(')'))}"
                                + (f"<br>{escape(note)}" if marked else ""))
        if rows:
            # Selected (so Copy takes them) and current (for the keyboard); the delegate keeps them yellow.
            selection = QItemSelection()
            for row in rows:
                selection.select(self.model.index(row), self.model.index(row))
            chosen = self.view.selectionModel()
            chosen.select(selection, QItemSelectionModel.SelectionFlag.ClearAndSelect)
            chosen.setCurrentIndex(self.model.index(rows[0]), QItemSelectionModel.SelectionFlag.NoUpdate)
            self._pending_scroll = rows
        self._scroll_to_passage()

    def _scroll_to_passage(self) -> None:
        """Centre the highlighted rows once the layout has reached every row.

        Not before: until then the list paints nothing and its scroll range is that of the first batch.
        Rows taller than the list together are shown from the first one's top."""
        rows = self._pending_scroll
        if rows is None or not self.view.layout_complete():
            return
        self._pending_scroll = None
        bar, height = self.view.verticalScrollBar(), self.view.viewport().height()
        if rows:
            top = self.view.visualRect(self.model.index(rows[0])).top() + bar.value()
            bottom = self.view.visualRect(self.model.index(rows[-1])).bottom() + 1 + bar.value()
            if bottom - top <= height:
                bar.setValue((top + bottom - height) // 2)
            else:
                bar.setValue(top - self.view.spacing())
        else:
            bar.setValue(0)
        self.positioned.emit()

    def _failed(self, error: AppError) -> None:
        self.header.setText(escape(f"The chat could not be read: {error}"))

    def open_photo(self, row: int) -> PhotoViewer | None:
        """The large view of the photo the message in ``row`` sent."""
        photo = self.model.index(row).data(PhotoRole)
        if photo is None:
            return None
        if self.photo_viewer is not None and self.photo_viewer.isVisible() and self.photo_viewer.photo.id == photo.id:
            self.photo_viewer.raise_()  # a double-click on the thumbnail is a click and an activation
            return self.photo_viewer
        if self.photo_viewer is not None:
            self.photo_viewer.close()
            self.photo_viewer.deleteLater()
        viewer = PhotoViewer(self.services, photo, self)
        viewer.open_in_chat.connect(self._open_in_chat)
        viewer.similar_requested.connect(self.similar_requested)
        viewer.show()
        self.photo_viewer = viewer
        self.photo_opened.emit(viewer)
        return viewer

    def _open_in_chat(self, sent: ChatPhoto) -> None:
        if sent.chat_id == self.chat_id:
            self.show_message(sent.message_id, PHOTO_NOTE)
        else:
            self.open_in_chat.emit(sent)

    def copy_selected(self) -> None:
        """The selected messages as the export wrote them (a photo's message names its file)."""
        rows = sorted(index.row() for index in self.view.selectionModel().selectedIndexes())
        QGuiApplication.clipboard().setText("\n".join(self.model.exported_line(row) for row in rows))

    def done(self, result: int) -> None:
        self.model.thumbnails.drop_queued()  # thumbnails of a closed chat are no longer wanted
        if self.photo_viewer is not None:
            self.photo_viewer.close()
        super().done(result)
