"""Search by what the webcam sees: live preview, Capture → photos like the frame (optionally kept).

Frames come from the first camera QtMultimedia lists, at the best format no larger than about
1024×768, or — with ``services.camera_file`` (``gallery-app --camera-file``) — from a video file that
QMediaPlayer decodes into the same video sink. Frames arrive in whatever pixel format the backend
chose (Format_RGB32, i.e. B,G,R,X in memory on little-endian machines, and others), so they go through
``pixel_buffer_from_qimage``, which declares the real channel order, never an assumed one.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import QSize, Qt, QUrl, Signal
from PySide6.QtGui import QCloseEvent, QImage, QPixmap
from PySide6.QtMultimedia import (
    QCamera, QCameraFormat, QMediaCaptureSession, QMediaDevices, QMediaPlayer, QVideoFrame, QVideoFrameFormat,
    QVideoSink,
)
from PySide6.QtWidgets import QCheckBox, QDialog, QHBoxLayout, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from gallery_app.core.errors import AppError
from gallery_app.core.photos.filters import ALL_PHOTOS, PhotoFilter
from gallery_app.core.photos.search import PhotoResults
from gallery_app.ui.photos import jobs
from gallery_app.ui.qt_pixels import pixel_buffer_from_qimage
from gallery_app.ui.workers import Worker

#: Capture size cap: enough for CLIP (224 px) and a decent kept photo, light on USB bandwidth and CPU.
MAX_CAPTURE = QSize(1024, 768)
#: The preview is redrawn at most this often (frames in between are only remembered).
PREVIEW_INTERVAL = 1 / 15

NO_CAMERA = ("No camera was found. Connect a webcam and open this again, or start the app with "
             "--camera-file VIDEO to use a video file instead.")


def pick_camera_format(formats: Sequence[QCameraFormat], limit: QSize = MAX_CAPTURE) -> QCameraFormat | None:
    """The largest format within ``limit`` (then the highest frame rate, then not MJPEG, which costs a
    decode per frame); if every format is larger, the smallest one."""
    if not formats:
        return None

    def area(fmt) -> int:
        return fmt.resolution().width() * fmt.resolution().height()

    fitting = [f for f in formats
               if f.resolution().width() <= limit.width() and f.resolution().height() <= limit.height()]
    if fitting:
        return max(fitting, key=lambda f: (area(f), f.maxFrameRate(),
                                           f.pixelFormat() != QVideoFrameFormat.PixelFormat.Format_Jpeg))
    return min(formats, key=area)


def fit_within(image: QImage, limit: QSize = MAX_CAPTURE) -> QImage:
    """A frame from a large video scaled down to the capture cap (camera frames already fit)."""
    if image.width() <= limit.width() and image.height() <= limit.height():
        return image
    return image.scaled(limit, Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.SmoothTransformation)


class CameraDialog(QDialog):
    """``CameraDialog(services)``; ``results_ready(PhotoResults)`` after a capture was searched."""

    results_ready = Signal(object)
    #: The first frame arrived (Capture is enabled from then on).
    first_frame = Signal()
    #: A message for the person (no camera, a playback error, a failed search).
    problem = Signal(str)

    def __init__(self, services, parent: QWidget | None = None, *, where: PhotoFilter = ALL_PHOTOS):
        super().__init__(parent)
        self.services = services
        self.where = where  # the photo pane's filter: a capture is searched among the photos it shows
        self.setWindowTitle("Search by camera")
        self.resize(720, 600)
        self.preview = QLabel("Starting the camera…")
        self.preview.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.preview.setMinimumSize(480, 360)
        self.preview.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.preview.setStyleSheet("background: #202020; color: #e0e0e0;")
        self.message = QLabel()
        for label in (self.preview, self.message):  # errors and results name files: data, not markup
            label.setTextFormat(Qt.TextFormat.PlainText)
        self.message.setWordWrap(True)
        self.keep = QCheckBox("Keep this photo in the gallery")
        self.capture_button = QPushButton("Capture")
        self.capture_button.setDefault(True)
        self.capture_button.setEnabled(False)
        self.capture_button.clicked.connect(self.capture)
        close = QPushButton("Close")
        close.clicked.connect(self.reject)
        row = QHBoxLayout()
        row.addWidget(self.keep)
        row.addStretch(1)
        row.addWidget(self.capture_button)
        row.addWidget(close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.preview, 1)
        layout.addWidget(self.message)
        layout.addLayout(row)

        self.source_name = ""
        self.last_results: PhotoResults | None = None
        self._frame: QVideoFrame | None = None
        self._frames = 0
        self._last_preview = 0.0
        self._worker: Worker | None = None
        self._player: QMediaPlayer | None = None
        self._camera: QCamera | None = None
        self._session: QMediaCaptureSession | None = None
        self._stopped = False
        self.sink = QVideoSink(self)
        self.sink.videoFrameChanged.connect(self._on_frame)
        self._start()

    # --- sources -------------------------------------------------------------------------------
    def _start(self) -> None:
        camera_file = getattr(self.services, "camera_file", None)
        if camera_file:
            self._start_file(Path(camera_file))
            return
        devices = QMediaDevices.videoInputs()
        if not devices:
            self._show_problem(NO_CAMERA)
            return
        device = devices[0]
        self.source_name = device.description()
        self._camera = QCamera(device, self)
        chosen = pick_camera_format(device.videoFormats())
        if chosen is not None:
            self._camera.setCameraFormat(chosen)
        self._camera.errorOccurred.connect(lambda _error, text: self._show_problem(f"The camera failed: {text}"))
        self._session = QMediaCaptureSession(self)
        self._session.setCamera(self._camera)
        self._session.setVideoSink(self.sink)
        self._camera.start()
        self.setWindowTitle(f"Search by camera — {self.source_name}")

    def _start_file(self, path: Path) -> None:
        if not path.is_file():
            self._show_problem(f"The video standing in for the camera, {path}, is not there.")
            return
        self.source_name = path.name
        self._player = QMediaPlayer(self)
        self._player.setVideoSink(self.sink)
        self._player.setLoops(QMediaPlayer.Loops.Infinite)
        self._player.errorOccurred.connect(
            lambda _error, text: self._show_problem(f"The video {path.name} cannot be played: {text}"))
        self._player.setSource(QUrl.fromLocalFile(str(path.resolve())))
        self._player.play()
        self.setWindowTitle(f"Search by camera — video {path.name}")

    def stop(self) -> None:
        """Stop the camera or the video (the dialog calls it when it closes)."""
        if self._stopped:
            return
        self._stopped = True
        if self._player is not None:
            self._player.stop()
            self._player.setVideoSink(None)
        if self._camera is not None:
            self._camera.stop()
        if self._session is not None:
            self._session.setVideoSink(None)
        self.sink.videoFrameChanged.disconnect(self._on_frame)

    # --- frames --------------------------------------------------------------------------------
    def _on_frame(self, frame: QVideoFrame) -> None:
        if not frame.isValid():
            return
        self._frame = QVideoFrame(frame)
        self._frames += 1
        if self._frames == 1:
            self.capture_button.setEnabled(self._worker is None)
            self.preview.setText("")
            self.first_frame.emit()
        now = time.monotonic()
        if now - self._last_preview >= PREVIEW_INTERVAL:
            self._last_preview = now
            image = frame.toImage()
            if not image.isNull():
                self.preview.setPixmap(QPixmap.fromImage(image).scaled(
                    self.preview.size(), Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.FastTransformation))

    def current_image(self) -> QImage | None:
        """The latest frame as a QImage (in the backend's pixel format), capped at ``MAX_CAPTURE``."""
        if self._frame is None:
            return None
        image = self._frame.toImage()
        return None if image.isNull() else fit_within(image)

    # --- capture -------------------------------------------------------------------------------
    def capture(self) -> None:
        image = self.current_image()
        if image is None:
            self._show_problem("No picture from the camera yet; wait for the preview, then capture.")
            return
        frame = pixel_buffer_from_qimage(image)  # the channel order as it really is in memory
        self.capture_button.setEnabled(False)
        self.message.setText("Searching for photos like this one…")
        self._worker = Worker(jobs.search_pixels, self.services, frame, self.keep.isChecked(), where=self.where)
        if self.keep.isChecked():
            self._worker.writing("the camera search")
        self._worker.signals.result.connect(self._found)
        self._worker.signals.error.connect(self._failed)
        self._worker.signals.finished.connect(self._search_done)
        self.services.run(self._worker)

    def _found(self, results: PhotoResults) -> None:
        if not self.isVisible():
            return  # closed while searching: the person moved on, the grid shows something else now
        self.last_results = results
        self.message.setText(results.describe())
        self.results_ready.emit(results)
        self.accept()

    def _failed(self, error: AppError) -> None:
        self._show_problem(str(error))

    def _search_done(self) -> None:
        self._worker = None
        self.capture_button.setEnabled(self._frames > 0)

    def _show_problem(self, text: str) -> None:
        self.message.setText(text)
        if self._frames == 0:
            self.preview.setText(text)
        self.problem.emit(text)

    # --- closing -------------------------------------------------------------------------------
    def done(self, result: int) -> None:
        if self._worker is not None and result != QDialog.DialogCode.Accepted:
            self._worker.cancel()
        self.stop()
        super().done(result)

    def closeEvent(self, event: QCloseEvent) -> None:
        self.stop()
        super().closeEvent(event)
