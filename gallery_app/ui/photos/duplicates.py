"""Duplicate photos: identical files and resized or re-encoded copies (found without any model), and with
the CLIP model also photos whose vectors are nearly the same; without it, one click opens Help → Models."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QAbstractItemView, QDialog, QDialogButtonBox, QDoubleSpinBox, QHBoxLayout, QLabel, QPushButton, QTreeView,
    QVBoxLayout, QWidget,
)

from gallery_app.core.errors import AppError
from gallery_app.core.models.specs import Role
from gallery_app.core.photos.search import DUPLICATE_THRESHOLD
from gallery_app.ui.photos import jobs
from gallery_app.ui.workers import Worker

PHOTO_ROLE = Qt.ItemDataRole.UserRole + 1


class DuplicatesDialog(QDialog):
    """Lists the groups; double-clicking a photo emits ``photo_activated(PhotoRecord)`` (the pane opens it)."""

    groups_shown = Signal(int)
    photo_activated = Signal(object)
    #: *Get the CLIP model…*: the Role whose row the Models dialog should open at.
    models_wanted = Signal(object)

    def __init__(self, services, parent: QWidget | None = None, *, threshold: float = DUPLICATE_THRESHOLD):
        super().__init__(parent)
        self.services = services
        self.setWindowTitle("Duplicate photos")
        self.resize(760, 520)
        self.threshold = QDoubleSpinBox()
        self.threshold.setRange(0.5, 0.999)
        self.threshold.setSingleStep(0.01)
        self.threshold.setDecimals(3)
        self.threshold.setValue(threshold)
        self.threshold.setToolTip("Lowest similarity (CLIP) counted as a duplicate")
        again = QPushButton("Find again")
        again.clicked.connect(self.find)
        self.get_clip_button = QPushButton("Get the CLIP model…")
        self.get_clip_button.setToolTip("Opens Help → Models at the CLIP model: one click downloads it")
        self.get_clip_button.clicked.connect(lambda: self.models_wanted.emit(Role.CLIP_VISION))
        self.get_clip_button.setVisible(False)
        self.summary = QLabel("Looking for duplicates…")
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
        summary_row = QHBoxLayout()
        summary_row.addWidget(self.summary, 1)
        summary_row.addWidget(self.get_clip_button)
        layout.addLayout(summary_row)
        layout.addWidget(self.tree, 1)
        layout.addWidget(buttons)
        self._worker: Worker | None = None
        self.find()

    def find(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
        self.summary.setText("Looking for duplicates…")
        # A writing job (it stores the perceptual hashes still missing): it may wait for an import.
        self._worker = Worker(jobs.find_duplicates, self.services, self.threshold.value()).writing(
            "the duplicate search")
        self._worker.signals.result.connect(self._show)
        self._worker.signals.error.connect(self._failed)
        self.services.run(self._worker)
        if self._worker.waiting_note():
            self.summary.setText(f"Looking for duplicates: {self._worker.waiting_note()}")

    def _show(self, findings: jobs.DuplicateFindings) -> None:
        groups = findings.groups
        self.groups.removeRows(0, self.groups.rowCount())
        for number, group in enumerate(groups, 1):
            top = QStandardItem(f"Group {number}: {group.describe()}")
            for photo in group.photos:
                name, path = QStandardItem(photo.name), QStandardItem(photo.shown_path)
                name.setData(photo, PHOTO_ROLE)
                top.appendRow([name, path])
            self.groups.appendRow([top, QStandardItem("")])
        self.tree.expandAll()
        self.tree.resizeColumnToContents(0)
        if groups:
            total = sum(len(g.photos) for g in groups)
            text = f"{len(groups)} group{'s' if len(groups) != 1 else ''} of near-identical photos ({total} photos)."
        elif findings.clip_missing is None:
            text = f"No copies, and no photos above similarity {self.threshold.value():.3f}."
        else:
            text = "No identical files and no resized or re-encoded copies."
        if findings.clip_missing is not None:
            text += (" Photos that only look alike (the same scene, edited) need the CLIP model, which is not on "
                     "this computer yet.")
        self.summary.setText(text)
        # Without CLIP the similarity means nothing; the button offers the model instead.
        self.threshold.setEnabled(findings.clip_missing is None)
        self.get_clip_button.setVisible(findings.clip_missing is not None)
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
