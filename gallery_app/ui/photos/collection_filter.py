"""The grid's filter: all photos, one added folder's, or the photos one chat sent.

Filled from ``jobs.photo_collections`` (read on a worker) and refilled whenever the gallery or the
chats change; the choice is kept across refills by what it is (a folder's or chat's id), not by its
place in the list, and falls back to all photos when its folder or chat has gone.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QWidget

from gallery_app.ui.photos.jobs import EVERY_PHOTO, PhotoCollection
from gallery_app.ui.plain_text import tooltip


class CollectionFilter(QComboBox):
    """``chosen(PhotoCollection)`` when the person picks another collection (or the chosen one is gone)."""

    chosen = Signal(object)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._collections: list[PhotoCollection] = []
        # Long chat titles must not widen the search row; the open list shows them whole.
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.setMinimumContentsLength(18)
        self.setToolTip("Show all photos, those of one folder, or those sent in one chat")
        self.set_collections([EVERY_PHOTO])
        self.activated.connect(lambda row: self.chosen.emit(self.current()))

    def current(self) -> PhotoCollection:
        row = self.currentIndex()
        return self._collections[row] if 0 <= row < len(self._collections) else EVERY_PHOTO

    def collections(self) -> list[PhotoCollection]:
        return list(self._collections)

    def set_collections(self, collections: list[PhotoCollection]) -> None:
        """Refill the list, keeping the choice (with its new count) when it is still there."""
        kept = self.current().key if self._collections else EVERY_PHOTO.key
        self._collections = list(collections) or [EVERY_PHOTO]
        self.blockSignals(True)  # a refill is not the person choosing
        self.clear()
        for number, collection in enumerate(self._collections):
            self.addItem(collection.label)  # QComboBox items are plain text: titles are data, never markup
            if collection.path:
                self.setItemData(number, tooltip(collection.path), Qt.ItemDataRole.ToolTipRole)
        keys = [collection.key for collection in self._collections]
        self.setCurrentIndex(keys.index(kept) if kept in keys else 0)
        self.blockSignals(False)
        if kept not in keys:
            self.chosen.emit(self.current())

    def choose(self, kind: str, collection_id: int | None = None) -> PhotoCollection:
        """Pick a collection as the person does (``choose("chat", 3)``); one not listed picks all photos."""
        keys = [collection.key for collection in self._collections]
        row = keys.index((kind, collection_id)) if (kind, collection_id) in keys else 0
        self.setCurrentIndex(row)
        self.activated.emit(row)
        return self.current()
