"""A whole chat, read-only, scrolled to a passage with its messages highlighted."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QAbstractListModel, QItemSelectionModel, QModelIndex, \
    QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import QAbstractItemView, QDialog, QDialogButtonBox, QLabel, QListView, QVBoxLayout

from gallery_app.core.chat.messages import MessageKind
from gallery_app.core.chat.repository import StoredMessage
from gallery_app.core.errors import AppError
from gallery_app.ui.chat import jobs
from gallery_app.ui.plain_text import escape, tooltip
from gallery_app.ui.workers import Worker

MessageIdRole = Qt.ItemDataRole.UserRole + 1
HighlightedRole = Qt.ItemDataRole.UserRole + 2
HIGHLIGHT = QColor(255, 236, 153)
#: The roles the model answers; the view asks each row for eight while it lays out tens of thousands.
_ROLES = frozenset((Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole, Qt.ItemDataRole.BackgroundRole,
                    Qt.ItemDataRole.ForegroundRole, Qt.ItemDataRole.FontRole, MessageIdRole, HighlightedRole))


def message_line(message: StoredMessage) -> str:
    when = f"{message.timestamp:%d %b %Y %H:%M}"
    if message.kind is MessageKind.SYSTEM or not message.sender:
        return f"{when} · {message.text}"
    return f"{when} · {message.sender}: {message.text}"


class MessageListModel(QAbstractListModel):
    def __init__(self, parent=None):
        super().__init__(parent)
        self._messages: list[StoredMessage] = []
        self._highlighted: set[int] = set()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._messages)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if role not in _ROLES or not index.isValid() or not 0 <= index.row() < len(self._messages):
            return None
        message = self._messages[index.row()]
        highlighted = message.id in self._highlighted
        if role == Qt.ItemDataRole.DisplayRole:
            return message_line(message)
        if role == Qt.ItemDataRole.ToolTipRole:
            return tooltip(message_line(message))
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
        return None

    def set_messages(self, messages: list[StoredMessage], highlighted: Iterable[int] = ()) -> None:
        self.beginResetModel()
        self._messages = list(messages)
        self._highlighted = set(highlighted)
        self.endResetModel()

    def highlighted_rows(self) -> list[int]:
        return [row for row, message in enumerate(self._messages) if message.id in self._highlighted]


class ChatViewer(QDialog):
    """Opens at once with "Loading…"; the messages are read in a worker and shown when they arrive."""

    #: Emitted once the messages are shown (and scrolled to the highlighted ones).
    loaded = Signal()

    def __init__(self, services, chat_id: int, highlight: Iterable[int] = (), *, title: str = "", parent=None):
        super().__init__(parent)
        self.services = services
        self.chat_id = chat_id
        self.highlight = list(highlight)
        self.setWindowTitle(title or "Chat")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, False)
        self.resize(720, 640)

        self.header = QLabel("Loading the chat…")
        self.header.setTextFormat(Qt.TextFormat.RichText)  # the title in bold; everything in it escaped
        self.header.setWordWrap(True)
        self.header.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.model = MessageListModel(self)
        self.view = QListView()
        self.view.setModel(self.model)
        self.view.setWordWrap(True)
        self.view.setUniformItemSizes(False)
        self.view.setResizeMode(QListView.ResizeMode.Adjust)
        # Wrapped rows of different heights must each be measured: a years-long chat (tens of thousands
        # of messages) would freeze the window for seconds; batches let the event loop run in between.
        self.view.setLayoutMode(QListView.LayoutMode.Batched)
        self.view.setBatchSize(100)
        self._pending_scroll = None
        self.view.verticalScrollBar().rangeChanged.connect(self._scroll_to_passage)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.view.setAlternatingRowColors(False)
        self.view.setSpacing(2)
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
        self.model.set_messages(contents.messages, self.highlight)
        rows = self.model.highlighted_rows()
        chat = contents.chat
        if chat is None:
            self.header.setText("This chat is no longer in the library.")
        else:
            marked = len(rows)
            self.header.setText(f"<b>{escape(chat.title)}</b> — {escape(chat.describe().split('(', 1)[-1].rstrip(')'))}"
                                + (f"<br>The {marked} highlighted messages are the passage that was found."
                                   if marked else ""))
        if rows:
            # Current (for the keyboard) but not selected: the selection colour would hide the highlight.
            self.view.selectionModel().setCurrentIndex(self.model.index(rows[0]),
                                                       QItemSelectionModel.SelectionFlag.NoUpdate)
            self._pending_scroll = self.model.index(rows[0])
            self._scroll_to_passage()
        self.view.setFocus()
        self.loaded.emit()

    def _scroll_to_passage(self, *_range) -> None:
        """Centre the passage once the batched layout has reached it (the scroll range grows as it goes)."""
        index = self._pending_scroll
        if index is None or not index.isValid():
            return
        if self.view.visualRect(index).isValid():
            self.view.scrollTo(index, QAbstractItemView.ScrollHint.PositionAtCenter)
            self._pending_scroll = None

    def _failed(self, error: AppError) -> None:
        self.header.setText(escape(f"The chat could not be read: {error}"))

    def copy_selected(self) -> None:
        rows = sorted(index.row() for index in self.view.selectionModel().selectedIndexes())
        QGuiApplication.clipboard().setText("\n".join(self.model.index(row).data() for row in rows))
