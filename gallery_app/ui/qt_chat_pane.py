"""The chats half of the window: the chats on this computer and the text of the selected one."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QLabel, QListWidget, QListWidgetItem, QPlainTextEdit, QSplitter, QVBoxLayout, QWidget

MAX_PREVIEW_BYTES = 2_000_000


def chat_title(path: Path) -> str:
    stem = path.stem if path.stem != "_chat" else path.parent.name
    return stem.replace("_", " ").removeprefix("WhatsApp Chat with ").strip().capitalize()


def read_chat_text(path: Path) -> str:
    raw = path.read_bytes()[:MAX_PREVIEW_BYTES]
    for encoding in ("utf-8-sig", "utf-16"):
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError:
            continue
    return raw.decode("utf-8", errors="replace")


class ChatPane(QWidget):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.header = QLabel()
        self.header.setWordWrap(True)
        self.chats = QListWidget()
        self.chats.setMinimumWidth(200)
        self.viewer = QPlainTextEdit()
        self.viewer.setReadOnly(True)
        self.viewer.setFont(QFont("monospace", 9))
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.chats)
        splitter.addWidget(self.viewer)
        splitter.setStretchFactor(1, 3)
        layout = QVBoxLayout(self)
        layout.addWidget(self.header)
        layout.addWidget(splitter, 1)
        self.chats.currentItemChanged.connect(self._show_selected)

    def show_chats(self, files: list[Path], description: str) -> None:
        self.chats.clear()
        for path in files:
            item = QListWidgetItem(chat_title(path))
            item.setData(Qt.ItemDataRole.UserRole, str(path))
            item.setToolTip(str(path))
            self.chats.addItem(item)
        self.header.setText(f"<b>{len(files)} chats</b> · {description}")
        if files:
            self.chats.setCurrentRow(0)

    def _show_selected(self, current: QListWidgetItem | None, _previous=None) -> None:
        if current is None:
            self.viewer.clear()
            return
        self.viewer.setPlainText(read_chat_text(Path(current.data(Qt.ItemDataRole.UserRole))))
