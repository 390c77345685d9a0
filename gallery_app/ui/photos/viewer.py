"""A large view of one photo with its metadata; the image is decoded upright off the GUI thread."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QImage, QPixmap, QResizeEvent
from PySide6.QtWidgets import (
    QDialog, QDialogButtonBox, QFormLayout, QHBoxLayout, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget,
)

from gallery_app.core.errors import AppError
from gallery_app.core.photos.decode import decode_image
from gallery_app.core.photos.library import PhotoRecord
from gallery_app.core.units import describe_size
from gallery_app.ui.plain_text import plain_label, set_plain
from gallery_app.ui.workers import Worker, WorkerContext

#: Longest side decoded for the viewer (a 12 MP photo is drawn from a JPEG draft at about this size).
VIEW_SIDE = 1600


def upright_image(_context: WorkerContext | None, path: str, max_side: int = VIEW_SIDE) -> QImage:
    rgb = decode_image(Path(path), max_side=max_side).rgb
    if max(rgb.size) > max_side:
        rgb.thumbnail((max_side, max_side))
    data = rgb.tobytes()
    return QImage(data, rgb.width, rgb.height, rgb.width * 3, QImage.Format.Format_RGB888).copy()


def photo_metadata(photo: PhotoRecord) -> list[tuple[str, str]]:
    """(label, value) rows for the viewer."""
    when = photo.captured_at.replace("T", " ") if photo.captured_at else "unknown"
    if photo.latitude is not None and photo.longitude is not None:
        place = f"{photo.latitude:.5f}, {photo.longitude:.5f}"
    else:
        place = "not recorded"
    size = f"{photo.width} × {photo.height} pixels, {describe_size(photo.file_size)}"
    return [("Date", when), ("Place", place), ("Camera", photo.camera or "not recorded"), ("Size", size),
            ("Source", photo.source), ("Path", photo.shown_path)]


class _ScaledImage(QLabel):
    """Shows a pixmap scaled to fit, keeping its aspect ratio, whenever the label is resized."""

    def __init__(self):
        super().__init__("Loading…")
        set_plain(self)  # it may say why a photo (named by its file) cannot be shown
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setMinimumSize(320, 240)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self._pixmap: QPixmap | None = None

    def set_image(self, image: QImage) -> None:
        self._pixmap = QPixmap.fromImage(image)
        self._rescale()

    def has_image(self) -> bool:
        return self._pixmap is not None

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._rescale()

    def _rescale(self) -> None:
        if self._pixmap is not None:
            self.setPixmap(self._pixmap.scaled(self.size(), Qt.AspectRatioMode.KeepAspectRatio,
                                               Qt.TransformationMode.SmoothTransformation))


class PhotoViewer(QDialog):
    """``PhotoViewer(services, photo)``; "Similar photos" asks the pane for photos like this one."""

    image_loaded = Signal()
    similar_requested = Signal(int)

    def __init__(self, services, photo: PhotoRecord, parent: QWidget | None = None):
        super().__init__(parent)
        self.services = services
        self.photo = photo
        self.setWindowTitle(photo.name)
        self.resize(QSize(1000, 720))
        self.image = _ScaledImage()
        self.fields: dict[str, QLabel] = {}
        form = QFormLayout()
        for label, value in photo_metadata(photo):
            field = plain_label(value)  # names, paths and the camera's EXIF text are data
            field.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            field.setWordWrap(True)
            self.fields[label] = field
            form.addRow(f"{label}:", field)
        side = QWidget()
        side.setLayout(form)
        side.setMaximumWidth(320)
        body = QHBoxLayout()
        body.addWidget(self.image, 1)
        body.addWidget(side)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        similar = QPushButton("Similar photos")
        similar.clicked.connect(self._similar)
        buttons.addButton(similar, QDialogButtonBox.ButtonRole.ActionRole)
        layout = QVBoxLayout(self)
        layout.addLayout(body, 1)
        layout.addWidget(buttons)
        self._worker = Worker(upright_image, photo.path)
        self._worker.signals.result.connect(self._image_ready)
        self._worker.signals.error.connect(self._image_failed)
        services.run(self._worker)

    def _image_ready(self, image: QImage) -> None:
        self.image.set_image(image)
        self.image_loaded.emit()

    def _image_failed(self, error: AppError) -> None:
        self.image.setText(f"This photo cannot be shown: {error}")
        self.image_loaded.emit()

    def _similar(self) -> None:
        self.similar_requested.emit(self.photo.id)
        self.accept()

    def done(self, result: int) -> None:
        self._worker.cancel()
        super().done(result)
