"""Near-duplicate groups: photos whose vectors are nearly the same (resized, re-encoded, lightly edited)."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QAbstractItemView, QDialog, QDialogButtonBox, QDoubleSpinBox, QHBoxLayout, QLabel, QPushButton, QTreeView,
    QVBoxLayout, QWidget,
)

from gallery_app.core.errors import AppError
from gallery_app.core.photos.search import DUPLICATE_THRESHOLD, DuplicateGroup
from gallery_app.ui.photos import jobs
from gallery_app.ui.workers import Worker

PHOTO_ROLE = Qt.ItemDataRole.UserRole + 1


class DuplicatesDialog(QDialog):
    """Lists the groups; double-clicking a photo emits ``photo_activated(PhotoRecord)`` (the pane opens it)."""

    groups_shown = Signal(int)
    photo_activated = Signal(object)

    def __init__(self, services, parent: QWidget | None = None, *, threshold: float = DUPLICATE_THRESHOLD):
        super().__init__(parent)
        self.services = services
        self.setWindowTitle("Near-duplicate photos")
        self.resize(760, 520)
        self.threshold = QDoubleSpinBox()
        self.threshold.setRange(0.5, 0.999)
        self.threshold.setSingleStep(0.01)
        self.threshold.setDecimals(3)
        self.threshold.setValue(threshold)
        self.threshold.setToolTip("Lowest similarity counted as a duplicate")
        again = QPushButton("Find again")
        again.clicked.connect(self.find)
        self.summary = QLabel("Looking for near-duplicates…")
        self.summary.setTextFormat(Qt.TextFormat.PlainText)  # an error may name a photo's file
        self.summary.setWordWrap(True)
        self.groups = QStandardItemModel(0, 2, self)
        self.groups.setHorizontalHeaderLabels(["Photo", "Path"])
        self.tree = QTreeView()
        self.tree.setModel(self.groups)
        self.tree.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.tree.doubleClicked.connect(self._activated)
        top = QHBoxLayout()
        top.addWidget(QLabel("Similarity at least"))
        top.addWidget(self.threshold)
        top.addWidget(again)
        top.addStretch(1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.summary)
        layout.addWidget(self.tree, 1)
        layout.addWidget(buttons)
        self._worker: Worker | None = None
        self.find()

    def find(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
        self.summary.setText("Looking for near-duplicates…")
        self._worker = Worker(jobs.find_duplicates, self.services, self.threshold.value())
        self._worker.signals.result.connect(self._show)
        self._worker.signals.error.connect(self._failed)
        self.services.run(self._worker)

    def _show(self, groups: list[DuplicateGroup]) -> None:
        self.groups.removeRows(0, self.groups.rowCount())
        for number, group in enumerate(groups, 1):
            top = QStandardItem(f"Group {number}: {len(group.photos)} photos, "
                                f"similarity ≥ {group.lowest_similarity:.3f}")
            for photo in group.photos:
                name, path = QStandardItem(photo.name), QStandardItem(photo.shown_path)
                name.setData(photo, PHOTO_ROLE)
                top.appendRow([name, path])
            self.groups.appendRow([top, QStandardItem("")])
        self.tree.expandAll()
        self.tree.resizeColumnToContents(0)
        if groups:
            total = sum(len(g.photos) for g in groups)
            self.summary.setText(f"{len(groups)} groups of near-identical photos ({total} photos).")
        else:
            self.summary.setText(f"No near-duplicates above similarity {self.threshold.value():.3f}.")
        self.groups_shown.emit(len(groups))

    def _failed(self, error: AppError) -> None:
        self.summary.setText(str(error))
        self.groups_shown.emit(0)

    def photo_names(self) -> list[str]:
        names = []
        for group in range(self.groups.rowCount()):
            top = self.groups.item(group, 0)
            names.extend(top.child(row, 0).text() for row in range(top.rowCount()))
        return names

    def _activated(self, index: QModelIndex) -> None:
        photo = index.siblingAtColumn(0).data(PHOTO_ROLE)
        if photo is not None:
            self.photo_activated.emit(photo)

    def done(self, result: int) -> None:
        if self._worker is not None:
            self._worker.cancel()
        super().done(result)
