"""The chats half of the window: the chats on this computer and the text of the selected one."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QLabel, QListWidget, QListWidgetItem, QPlainTextEdit, QSplitter, QVBoxLayout, QWidget

from gallery_app.core.chat.export_file import export_title, read_export



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
            item = QListWidgetItem(export_title(path))
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
        self.viewer.setPlainText(read_export(Path(current.data(Qt.ItemDataRole.UserRole))).text)
