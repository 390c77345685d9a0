"""The sources a question searches: the imported chats (title, participants, message count, date range), the
notes folders (name, what they hold), and the delegate that draws both."""

from __future__ import annotations

from datetime import datetime

from PySide6.QtCore import QAbstractListModel, QModelIndex, QPersistentModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QFont, QFontMetrics, QPainter
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem

from gallery_app.core.chat.repository import ChatInfo
from gallery_app.core.file_names import printable
from gallery_app.ui.plain_text import tooltip

ChatRole = Qt.ItemDataRole.UserRole + 1
ChatIdRole = Qt.ItemDataRole.UserRole + 2
DetailsRole = Qt.ItemDataRole.UserRole + 3


def date_range(first: datetime | None, last: datetime | None) -> str:
    if not first or not last:
        return "no messages"
    if first.date() == last.date():
        return f"{first:%d %b %Y}"
    if first.year == last.year:
        return f"{first:%d %b} – {last:%d %b %Y}"
    return f"{first:%d %b %Y} – {last:%d %b %Y}"


def chat_details(chat: ChatInfo) -> str:
    """The second line under a chat's title: who, how many messages, when."""
    people = ", ".join(chat.participants) or "nobody"
    messages = "message" if chat.message_count == 1 else "messages"
    return f"{people} · {chat.message_count:,} {messages} · {date_range(chat.first, chat.last)}"


class ChatListModel(QAbstractListModel):
    """One row per imported chat; ``set_chats`` replaces the rows (the list is small)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._chats: list[ChatInfo] = []

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._chats)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not 0 <= index.row() < len(self._chats):
            return None
        chat = self._chats[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return chat.title
        if role == Qt.ItemDataRole.ToolTipRole:
            return tooltip(chat.describe())
        if role == Qt.ItemDataRole.AccessibleTextRole:
            return f"{chat.title}: {chat_details(chat)}"
        if role == DetailsRole:
            return chat_details(chat)
        if role == ChatRole:
            return chat
        if role == ChatIdRole:
            return chat.id
        return None

    def roleNames(self):
        names = super().roleNames()
        names.update({ChatRole: b"chat", ChatIdRole: b"chatId", DetailsRole: b"details"})
        return names

    def set_chats(self, chats: list[ChatInfo]) -> None:
        self.beginResetModel()
        self._chats = list(chats)
        self.endResetModel()

    def chats(self) -> list[ChatInfo]:
        return list(self._chats)

    def row_of(self, chat_id: int) -> int:
        return next((row for row, chat in enumerate(self._chats) if chat.id == chat_id), -1)


class ChatListDelegate(QStyledItemDelegate):
    """Title in bold, then participants · message count · dates in a smaller, quieter line."""

    MARGIN = 8

    def _fonts(self, option: QStyleOptionViewItem) -> tuple[QFont, QFont]:
        title = QFont(option.font)
        title.setBold(True)
        details = QFont(option.font)
        details.setPointSizeF(max(option.font.pointSizeF() * 0.9, 7.0))
        return title, details

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex) -> QSize:
        title, details = self._fonts(option)
        height = QFontMetrics(title).height() + QFontMetrics(details).height() + 2 * self.MARGIN + 2
        return QSize(200, height)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        opt.text = ""
        style = opt.widget.style() if opt.widget else None
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, opt.widget)
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        palette = option.palette
        text_colour = palette.highlightedText().color() if selected else palette.text().color()
        quiet = palette.highlightedText().color() if selected else palette.placeholderText().color()
        title_font, details_font = self._fonts(option)
        rect = option.rect.adjusted(self.MARGIN, self.MARGIN, -self.MARGIN, -self.MARGIN)
        painter.save()
        title_metrics = QFontMetrics(title_font)
        painter.setFont(title_font)
        painter.setPen(text_colour)
        title_rect = QRect(rect.left(), rect.top(), rect.width(), title_metrics.height())
        painter.drawText(title_rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                         title_metrics.elidedText(index.data() or "", Qt.TextElideMode.ElideRight, rect.width()))
        details_metrics = QFontMetrics(details_font)
        painter.setFont(details_font)
        painter.setPen(quiet)
        details_rect = QRect(rect.left(), title_rect.bottom() + 2, rect.width(), details_metrics.height())
        painter.drawText(details_rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                         details_metrics.elidedText(index.data(DetailsRole) or "", Qt.TextElideMode.ElideRight,
                                                    rect.width()))
        painter.restore()


FolderIdRole = Qt.ItemDataRole.UserRole + 4
#: Skipped files a folder's tooltip names one by one.
TOOLTIP_SKIPS = 8


class NotesFolderListModel(QAbstractListModel):
    """One row per notes folder (``ui.chat.notes_jobs.NotesFolderInfo``): its name, then what it holds; drawn
    by ``ChatListDelegate`` like a chat."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._folders: list = []

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._folders)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not 0 <= index.row() < len(self._folders):
            return None
        info = self._folders[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return printable(info.name)
        if role == Qt.ItemDataRole.ToolTipRole:
            lines = [printable(info.folder.path), info.details()]
            lines += [f"skipped ({reason}): {printable(path)}" for path, reason in info.skipped[:TOOLTIP_SKIPS]]
            if len(info.skipped) > TOOLTIP_SKIPS:
                lines.append(f"… and {len(info.skipped) - TOOLTIP_SKIPS:,} more skipped files")
            return tooltip("\n".join(lines))
        if role == Qt.ItemDataRole.AccessibleTextRole:
            return f"Notes folder {printable(info.name)}: {info.details()}"
        if role == DetailsRole:
            return info.details()
        if role == FolderIdRole:
            return info.id
        return None

    def set_folders(self, folders: list) -> None:
        self.beginResetModel()
        self._folders = list(folders)
        self.endResetModel()

    def folders(self) -> list:
        return list(self._folders)

    def row_of(self, folder_id: int) -> int:
        return next((row for row, info in enumerate(self._folders) if info.id == folder_id), -1)
