"""A large view of one photo with its metadata; the image is decoded upright off the GUI thread.

A photo sent in a chat also says who sent it, where, when and with which words ("Sent by Maya in
“Weekend away” on …"), read off the GUI thread, with *Open in chat* to read the message in its chat."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QImage, QPixmap, QResizeEvent
from PySide6.QtWidgets import (
    QDialog, QDialogButtonBox, QFormLayout, QHBoxLayout, QLabel, QMenu, QPushButton, QSizePolicy, QVBoxLayout,
    QWidget,
)

from gallery_app.core.errors import AppError
from gallery_app.core.photos.chat_photos import ChatPhoto, chat_context
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


def sent_in_chats(_context: WorkerContext | None, services, photo_id: int) -> list[ChatPhoto]:
    """Every chat message that sent the photo, earliest first (none for a photo no chat sent)."""
    with services.connect() as conn:
        return chat_context(conn, [photo_id]).get(photo_id, [])


def also_sent(others: int) -> str:
    return f"Also sent in {others} other message{'s' if others != 1 else ''}." if others else ""


def message_choice(sent: ChatPhoto) -> str:
    """One message in the *Open in chat* menu; a menu item's "&" marks a shortcut key, so a name's is doubled."""
    text = f"{sent.sender or 'Someone'} in “{sent.chat_title}”, {sent.sent_at:%a %d %b %Y, %H:%M}"
    return text.replace("&", "&&")


def photo_metadata(photo: PhotoRecord) -> list[tuple[str, str]]:
    """(label, value) rows for the viewer."""
    if photo.captured_at:
        when = photo.captured_at.replace("T", " ")
    else:  # the timeline still places it: when a chat sent it, else the file's date
        when = f"{photo.taken_time:%Y-%m-%d %H:%M} (none in the photo: when it was sent, else the file's date)"
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
    """``PhotoViewer(services, photo)``; "Similar photos" asks the pane for photos like this one, and
    *Open in chat* (for a photo sent in a chat) asks for the chat viewer at the message that sent it."""

    image_loaded = Signal()
    similar_requested = Signal(int)
    #: The ChatPhoto (chat and message) to show in the chat viewer.
    open_in_chat = Signal(object)
    #: The chats that sent this photo were read (the "Sent by …" line shows if there are any).
    chat_context_loaded = Signal()

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
        # Shown once the chat context is read, and only for a photo that a chat sent.
        self.sent_line = plain_label()  # the sender's name, the chat's title and the caption are data
        self.sent_line.setWordWrap(True)
        self.sent_line.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.also_line = plain_label()
        self.also_line.setObjectName("quiet")
        self.open_in_chat_button = QPushButton("Open in chat")
        self.open_in_chat_button.setToolTip("Read the message that sent this photo, in its chat")
        self.sent: list[ChatPhoto] = []
        sent_text = QVBoxLayout()
        sent_text.addWidget(self.sent_line)
        sent_text.addWidget(self.also_line)
        self.sent_row = QWidget()
        sent_row = QHBoxLayout(self.sent_row)
        sent_row.setContentsMargins(0, 0, 0, 0)
        sent_row.addLayout(sent_text, 1)
        sent_row.addWidget(self.open_in_chat_button, 0, Qt.AlignmentFlag.AlignTop)
        self.sent_row.hide()
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        similar = QPushButton("Similar photos")
        similar.clicked.connect(self._similar)
        buttons.addButton(similar, QDialogButtonBox.ButtonRole.ActionRole)
        layout = QVBoxLayout(self)
        layout.addLayout(body, 1)
        layout.addWidget(self.sent_row)
        layout.addWidget(buttons)
        self._worker = Worker(upright_image, photo.path)
        self._worker.signals.result.connect(self._image_ready)
        self._worker.signals.error.connect(self._image_failed)
        services.run(self._worker)
        # Any photo may have been sent in a chat: one a folder holds is linked to the message, not copied.
        self._context_worker = Worker(sent_in_chats, services, photo.id)
        self._context_worker.signals.result.connect(self._chat_context_ready)
        self._context_worker.signals.finished.connect(self.chat_context_loaded)
        services.run(self._context_worker)

    def _chat_context_ready(self, sent: list[ChatPhoto]) -> None:
        self.sent = list(sent)
        if not self.sent:
            return
        self.sent_line.setText(self.sent[0].describe())
        self.also_line.setText(also_sent(len(self.sent) - 1))
        self.also_line.setVisible(len(self.sent) > 1)
        if len(self.sent) == 1:
            self.open_in_chat_button.clicked.connect(lambda: self._open_in_chat(self.sent[0]))
        else:  # several messages sent it: the person chooses which one to read
            menu = QMenu(self.open_in_chat_button)
            for each in self.sent:
                menu.addAction(message_choice(each)).triggered.connect(
                    lambda _checked=False, chosen=each: self._open_in_chat(chosen))
            self.open_in_chat_button.setMenu(menu)
        self.sent_row.show()

    def _open_in_chat(self, sent: ChatPhoto) -> None:
        self.open_in_chat.emit(sent)
        self.accept()

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
        self._context_worker.cancel()
        super().done(result)
