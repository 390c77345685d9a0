"""Thumbnails for the grid: decoded on a private thread pool (as ``QImage``), kept as icons in an LRU.

``data()`` asks for the thumbnail of a row only when the view paints it, so exactly the visible
thumbnails are loaded. Newer requests run first (the rows the person scrolled to now matter more than
the ones scrolled past), and a reset drops the requests still waiting in the queue.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

from PySide6.QtCore import QObject, QThreadPool, Signal
from PySide6.QtGui import QColor, QIcon, QImage, QPainter, QPixmap

from gallery_app.core.errors import AppError
from gallery_app.core.photos.thumbnails import load_thumbnail
from gallery_app.ui.workers import Worker, WorkerContext

#: Icons kept converted; at 160 px about 100 KB each, so ~40 MB at most.
ICON_CACHE = 400


def thumbnail_image(_context: WorkerContext | None, key: int, path: str, content_hash: str | None,
                    size: int) -> tuple[int, QImage]:
    """(key, upright thumbnail) read from the disk cache or decoded; runs on a pool thread."""
    pixels = load_thumbnail(Path(path), size, content_hash=content_hash)
    # RGBA in memory is exactly Format_RGBA8888; copy() detaches the image from the Python bytes.
    image = QImage(pixels.data, pixels.width, pixels.height, pixels.width * 4, QImage.Format.Format_RGBA8888)
    # Centred on a square transparent canvas, so every cell of the grid lays out alike and the names
    # line up under landscape and portrait photos (QPainter on a QImage is fine off the GUI thread).
    square = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    square.fill(0)
    painter = QPainter(square)
    painter.drawImage((size - pixels.width) // 2, (size - pixels.height) // 2, image)
    painter.end()
    return key, square


def _filled_icon(size: int, colour: str, mark: str | None = None) -> QIcon:
    pixmap = QPixmap(size, size)
    pixmap.fill(QColor(colour))
    if mark:
        painter = QPainter(pixmap)
        painter.setPen(QColor("#7a7a7a"))
        font = painter.font()
        font.setPixelSize(size // 3)
        painter.setFont(font)
        painter.drawText(pixmap.rect(), 0x84, mark)  # Qt.AlignCenter
        painter.end()
    return QIcon(pixmap)


class ThumbnailLoader(QObject):
    """Loads thumbnails by key (a photo id) and tells which key became ready or failed."""

    ready = Signal(int)
    failed = Signal(int, str)

    def __init__(self, size: int, parent: QObject | None = None, *, threads: int = 2,
                 cache_size: int = ICON_CACHE):
        super().__init__(parent)
        self.size = size
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(threads)
        self._icons: OrderedDict[int, QIcon] = OrderedDict()
        self._cache_size = cache_size
        self._broken: set[int] = set()
        self._pending: dict[int, Worker] = {}
        self._priority = 0
        self.placeholder = _filled_icon(size, "#e3e3e3")
        self.broken_icon = _filled_icon(size, "#f0e0e0", "?")
        self.loaded = 0  # thumbnails decoded so far (for tests and the curious)
        self.requested = 0  # thumbnails asked for (only rows the view painted)

    def icon(self, key: int, path: str, content_hash: str | None) -> QIcon:
        """The thumbnail if it is ready; otherwise the placeholder, and the thumbnail is requested."""
        icon = self._icons.get(key)
        if icon is not None:
            self._icons.move_to_end(key)
            return icon
        if key in self._broken:
            return self.broken_icon
        self._request(key, path, content_hash)
        return self.placeholder

    def _request(self, key: int, path: str, content_hash: str | None) -> None:
        if key in self._pending:
            return
        worker = Worker(thumbnail_image, key, path, content_hash, self.size)
        worker.signals.result.connect(self._ready)
        worker.signals.error.connect(lambda error, k=key: self._failed(k, error))
        worker.signals.finished.connect(lambda k=key: self._pending.pop(k, None))
        self._pending[key] = worker
        self.requested += 1
        self._priority += 1
        self.pool.start(worker, self._priority)  # the newest request first

    def _ready(self, outcome: tuple[int, QImage]) -> None:
        key, image = outcome
        self._icons[key] = QIcon(QPixmap.fromImage(image))  # QPixmap only here, on the GUI thread
        self._icons.move_to_end(key)
        while len(self._icons) > self._cache_size:
            self._icons.popitem(last=False)
        self.loaded += 1
        self.ready.emit(key)

    def _failed(self, key: int, error: AppError) -> None:
        self._broken.add(key)
        self.failed.emit(key, str(error))

    def drop_queued(self) -> None:
        """Forget requests not started yet (after a reset their rows may be gone)."""
        for key, worker in list(self._pending.items()):
            if self.pool.tryTake(worker):
                self._pending.pop(key, None)

    def shutdown(self, timeout_ms: int = 10_000) -> bool:
        self.drop_queued()
        return self.pool.waitForDone(timeout_ms)
