"""The photo grid: a list model over photo paths whose thumbnails load lazily on a private pool."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QAbstractListModel, QModelIndex, QObject, QSize, Qt, QThreadPool, Signal
from PySide6.QtGui import QColor, QIcon, QImage, QPixmap
from PySide6.QtWidgets import QListView, QVBoxLayout, QLabel, QWidget

from gallery_app.core.errors import AppError
from gallery_app.core.photos.thumbnails import load_thumbnail
from gallery_app.ui.workers import Worker

THUMBNAIL_SIZE = 160


def _to_qimage(path: Path, size: int) -> QImage:
    pixels = load_thumbnail(path, size)
    # The buffer is RGBA in memory, which is exactly Format_RGBA8888; copy() detaches from the bytes.
    return QImage(pixels.data, pixels.width, pixels.height, pixels.width * 4, QImage.Format.Format_RGBA8888).copy()


class PhotoListModel(QAbstractListModel):
    """Rows are photos; DecorationRole is the thumbnail once it has been decoded off the GUI thread."""

    PathRole = Qt.ItemDataRole.UserRole + 1
    thumbnail_failed = Signal(str)

    def __init__(self, parent: QObject | None = None, *, thumbnail_size: int = THUMBNAIL_SIZE):
        super().__init__(parent)
        self._paths: list[Path] = []
        self._icons: dict[Path, QIcon] = {}
        self._requested: set[Path] = set()
        self._workers: set[Worker] = set()
        self._size = thumbnail_size
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(2)
        placeholder = QPixmap(thumbnail_size, thumbnail_size)
        placeholder.fill(QColor("#d9d9d9"))
        self._placeholder = QIcon(placeholder)

    def set_paths(self, paths: list[Path]) -> None:
        self.beginResetModel()
        self._paths = list(paths)
        self._icons.clear()
        self._requested.clear()
        self.endResetModel()

    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._paths)

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not 0 <= index.row() < len(self._paths):
            return None
        path = self._paths[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return path.stem.replace("_", " ")
        if role == Qt.ItemDataRole.ToolTipRole:
            return str(path)
        if role == Qt.ItemDataRole.DecorationRole:
            icon = self._icons.get(path)
            if icon is None:
                self._request(path)
                return self._placeholder
            return icon
        if role == self.PathRole:
            return str(path)
        return None

    def _request(self, path: Path) -> None:
        # data() is called only for rows the view paints, so this loads exactly the visible thumbnails.
        if path in self._requested:
            return
        self._requested.add(path)
        worker = Worker(lambda _context, p=path: (p, _to_qimage(p, self._size)))
        worker.signals.result.connect(self._thumbnail_ready)
        worker.signals.error.connect(lambda error, p=path: self._thumbnail_error(p, error))
        worker.signals.finished.connect(lambda w=worker: self._workers.discard(w))
        self._workers.add(worker)
        self.pool.start(worker)

    def _thumbnail_ready(self, outcome: tuple[Path, QImage]) -> None:
        path, image = outcome
        self._icons[path] = QIcon(QPixmap.fromImage(image))  # QPixmap only here, on the GUI thread
        self._emit_changed(path)

    def _thumbnail_error(self, path: Path, error: AppError) -> None:
        self.thumbnail_failed.emit(str(error))

    def _emit_changed(self, path: Path) -> None:
        if path in self._paths:
            index = self.index(self._paths.index(path))
            self.dataChanged.emit(index, index, [Qt.ItemDataRole.DecorationRole])

    def loaded_thumbnails(self) -> int:
        return len(self._icons)

    def shutdown(self) -> None:
        self.pool.clear()
        self.pool.waitForDone(10_000)


class PhotoGrid(QWidget):
    """The photos half of the window."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.header = QLabel()
        self.header.setWordWrap(True)
        self.model = PhotoListModel(self)
        self.view = QListView()
        self.view.setViewMode(QListView.ViewMode.IconMode)
        self.view.setResizeMode(QListView.ResizeMode.Adjust)
        self.view.setUniformItemSizes(True)
        self.view.setIconSize(QSize(THUMBNAIL_SIZE, THUMBNAIL_SIZE))
        self.view.setGridSize(QSize(THUMBNAIL_SIZE + 24, THUMBNAIL_SIZE + 36))
        self.view.setSpacing(6)
        self.view.setMovement(QListView.Movement.Static)
        self.view.setModel(self.model)
        layout = QVBoxLayout(self)
        layout.addWidget(self.header)
        layout.addWidget(self.view, 1)

    def show_photos(self, paths: list[Path], description: str) -> None:
        self.model.set_paths(paths)
        self.header.setText(f"<b>{len(paths)} photos</b> · {description}")
