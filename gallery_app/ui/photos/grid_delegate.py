"""How the photo grid lays out and paints its rows: photo cells of one size, month headers across the width.

The grid is a QListView in icon mode whose items flow left to right and wrap. A header's size hint is
the viewport's whole width, so it sits alone on its line and the month's photos start on the next.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QPainter, QPalette
from PySide6.QtWidgets import QListView, QStyledItemDelegate, QStyleOptionViewItem

from gallery_app.ui.photos.grid_model import PhotoGridModel


class PhotoGridDelegate(QStyledItemDelegate):
    """``PhotoGridDelegate(view, cell)``: photos in ``cell``-sized boxes, headers painted full-width."""

    def __init__(self, view: QListView, cell: QSize):
        super().__init__(view)
        self.view = view
        self.cell = QSize(cell)
        metrics = view.fontMetrics()
        self.header_height = int(metrics.height() * 1.6) + 10

    def _header_font(self):
        font = self.view.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.15)
        return font

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:
        if index.data(PhotoGridModel.HeaderRole) is not None:
            # The line's width less the spacing on both sides, so the flow wraps before and after it.
            width = self.view.viewport().width() - 2 * self.view.spacing() - 1
            return QSize(max(width, self.cell.width()), self.header_height)
        # Fixed, and without asking the model: the default hint reads the thumbnail (DecorationRole),
        # which would start loading one for every row each time the view lays them out.
        return QSize(self.cell)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem,
              index: QModelIndex | QPersistentModelIndex) -> None:
        label = index.data(PhotoGridModel.HeaderRole)
        if label is None:
            super().paint(painter, option, index)
            return
        painter.save()
        painter.setFont(self._header_font())
        palette = self.view.palette()  # not the option's: a header is not an enabled item, yet not greyed out
        painter.setPen(palette.color(QPalette.ColorRole.Text))
        text_rect = QRect(option.rect).adjusted(4, 0, -4, -6)
        painter.drawText(text_rect, int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignBottom), label)
        painter.setPen(palette.color(QPalette.ColorRole.Mid))
        bottom = option.rect.bottom() - 2
        painter.drawLine(option.rect.left() + 4, bottom, option.rect.right() - 4, bottom)
        painter.restore()
