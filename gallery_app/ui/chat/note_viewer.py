"""Opening a note passage: a PDF or Word file in the system's viewer, a text, Markdown or JSONL note in the app's
own viewer at the passage.

The app's viewer shows the document's text as the loader reads it (``core.notes.reading``), the text the
passage's span points into, as plain text: a note is data, its Markdown or HTML is never rendered.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QColor, QDesktopServices, QTextCharFormat, QTextCursor, QTextFormat
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QPlainTextEdit, QTextEdit, QVBoxLayout, QWidget

from gallery_app.core.chat.retrieval import Match
from gallery_app.core.errors import AppError
from gallery_app.core.file_names import printable
from gallery_app.core.notes.reading import NotePassage
from gallery_app.ui.chat import notes_jobs
from gallery_app.ui.chat.viewer import HIGHLIGHT
from gallery_app.ui.plain_text import plain_label
from gallery_app.ui.workers import Worker

#: Kinds another app shows better than plain text: their layout, tables and pictures are the point.
SYSTEM_VIEWER_KINDS = {"pdf": "PDF", "docx": "Word file"}
#: The passage's lines, lighter than the best line (which has the cards' highlight colour).
PASSAGE_TINT = QColor(255, 248, 214)


def file_url(path: Path, page: int | None = None) -> QUrl:
    """The file's URL; for a PDF page, with ``#page=N``.

    Best-effort: that fragment is the PDF open-parameters convention (Adobe's), which Acrobat, Chrome,
    Firefox, Evince and Okular honour when handed such a URL, while others (and desktops that pass only
    the path on to the viewer) open the first page instead."""
    url = QUrl.fromLocalFile(str(path))
    if page is not None:
        url.setFragment(f"page={page}")
    return url


def open_in_system_viewer(match: Match) -> str:
    """Hands a PDF or Word note to the system's viewer; what happened, for the status bar."""
    note = match.note
    assert note is not None
    shown = printable(note.relative_path)
    if not Path(note.path).is_file():
        return f"{shown} is no longer there; its folder is rescanned at the next start."
    page = note.page if note.kind == "pdf" else None
    if not QDesktopServices.openUrl(file_url(note.path, page)):
        return f"No app on this computer opened {shown}."
    return f"Opened {shown}" + (f" at page {page}." if page is not None else ".")


def utf16_offset(text: str, at: int) -> int:
    """Where ``text[:at]`` ends in a QTextDocument holding ``text`` with its line ends made "\\n": Qt counts
    UTF-16 units (an emoji is two) and drops the "\\r" of "\\r\\n"."""
    prefix = normalised(text[:at])
    return len(prefix.encode("utf-16-le")) // 2


def normalised(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


class NoteViewer(QDialog):
    """Opens at once with "Reading the note…"; the note is read in a worker and shown at the passage: tinted,
    its best line highlighted, the cursor there, centred in the view."""

    #: The note is shown, at the passage when it is still in the file.
    loaded = Signal()

    def __init__(self, services, match: Match, parent: QWidget | None = None):
        super().__init__(parent)
        assert match.note is not None
        self.services = services
        self.match = match
        self.passage: NotePassage | None = None
        self.setWindowTitle(printable(match.chat_title) or "Note")
        self.resize(760, 680)
        self.header = plain_label(f"{match.chat_title} — {match.day}\n{printable(match.note.relative_path)}")
        self.header.setWordWrap(True)
        self.status = plain_label("Reading the note…")
        self.status.setObjectName("quiet")
        self.status.setWordWrap(True)
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        self.open_button = buttons.addButton("Open with the default app", QDialogButtonBox.ButtonRole.ActionRole)
        self.open_button.clicked.connect(lambda: QDesktopServices.openUrl(file_url(match.note.path)))
        layout = QVBoxLayout(self)
        layout.addWidget(self.header)
        layout.addWidget(self.text, 1)
        layout.addWidget(self.status)
        layout.addWidget(buttons)

        worker = Worker(notes_jobs.read_note, services, match.chunk_id)
        worker.signals.result.connect(self._show)
        worker.signals.error.connect(self._failed)
        self.worker = services.run(worker)

    def highlighted(self) -> list[str]:
        """The tinted passage, then its highlighted best line (if any), as plain text."""
        return [selection.cursor.selectedText().replace("\u2029", "\n") for selection in self.text.extraSelections()]

    def _show(self, passage: NotePassage) -> None:
        self.passage = passage
        self.text.setPlainText(normalised(passage.text))
        if passage.found:
            self._mark(passage)
            self.status.setText("The passage that was found is tinted; its best-matching line is highlighted.")
        else:
            self.status.setText("The note has changed since it was indexed: the passage is no longer in it.")
        self.text.setFocus()
        self.loaded.emit()

    def _mark(self, passage: NotePassage) -> None:
        start, end = utf16_offset(passage.text, passage.start), utf16_offset(passage.text, passage.end)
        selections = [self._tint(start, end, PASSAGE_TINT)]
        best = self._best_line(passage)
        if best is not None:
            selections.append(self._tint(*best, HIGHLIGHT))
        self.text.setExtraSelections(selections)
        # The cursor at the passage's start, not a selection of it: the selection's colour would paint
        # over the highlight of its best line.
        cursor = QTextCursor(self.text.document())
        cursor.setPosition(best[0] if best is not None else start)
        self.text.setTextCursor(cursor)
        self._centre()
        # The first layout of a long note happens after this; centre again once it has.
        QTimer.singleShot(0, self._centre)

    def _centre(self) -> None:
        if self.passage is not None and self.passage.found:
            self.text.centerCursor()

    def _best_line(self, passage: NotePassage) -> tuple[int, int] | None:
        """The (start, end) in the document of the passage's best line (``NoteSource.best_lines``)."""
        assert passage.start is not None and self.match.note is not None
        lines = passage.text[passage.start:passage.end].split("\n")
        for n in self.match.note.best_lines:
            if n < len(lines):
                at = passage.start + sum(len(line) + 1 for line in lines[:n])
                return utf16_offset(passage.text, at), utf16_offset(passage.text, at + len(lines[n]))
        return None

    def _tint(self, start: int, end: int, colour: QColor) -> QTextEdit.ExtraSelection:
        selection = QTextEdit.ExtraSelection()
        char_format = QTextCharFormat()
        char_format.setBackground(colour)
        char_format.setForeground(QColor("black"))
        char_format.setProperty(QTextFormat.Property.FullWidthSelection, False)
        selection.format = char_format
        cursor = QTextCursor(self.text.document())
        cursor.setPosition(start)
        cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
        selection.cursor = cursor
        return selection

    def _failed(self, error: AppError) -> None:
        self.status.setText(str(error))
        self.loaded.emit()


def open_note(services, match: Match, parent: QWidget | None = None) -> NoteViewer | None:
    """A note passage opened: the app's viewer for a text note (returned), the system's for a PDF or Word file
    (None; the status bar says what happened)."""
    assert match.note is not None
    if match.note.kind in SYSTEM_VIEWER_KINDS:
        services.message.emit(open_in_system_viewer(match))
        return None
    viewer = NoteViewer(services, match, parent)
    viewer.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, True)
    viewer.show()
    return viewer
