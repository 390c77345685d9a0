"""The conversation: question and answer bubbles, the passages turn, notes, and the input box.

Bubbles are ordinary widgets in a scroll area, so their text is selectable and the passages are
clickable. A streaming answer appends to one label; the view keeps to the bottom unless the
person has scrolled up to read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date

from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtGui import QCursor, QKeyEvent, QMouseEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPlainTextEdit, QProgressBar, QScrollArea, \
    QSizePolicy, QVBoxLayout, QWidget

from gallery_app.core.chat.events import UNSUPPORTED, Answer
from gallery_app.core.chat.evidence import PassageLine
from gallery_app.core.chat.retrieval import Match, Retrieval
from gallery_app.core.file_names import printable
from gallery_app.ui.chat.viewer import HIGHLIGHT
from gallery_app.ui.plain_text import escape as _escape

#: Lines of a passage shown in its card; the viewer shows all of it.
CARD_LINES = 6
BUBBLE_MAX_WIDTH = 680
#: How a passage card marks the lines of its best-matching messages (the viewer's highlight colour).
FOCUS_STYLE = f"background-color: {HIGHLIGHT.name()}; color: black;"
_CITATION = re.compile(r"\[(\d{1,2})\]")

STYLE = """
QFrame#question { background: #dcebff; border-radius: 10px; }
QFrame#answer { background: palette(alternate-base); border: 1px solid palette(mid); border-radius: 10px; }
QFrame#note { background: transparent; }
QFrame#error { background: #fdecea; border: 1px solid #f5c2bd; border-radius: 10px; }
QFrame#passages { background: transparent; }
QFrame#passage { background: palette(base); border: 1px solid palette(mid); border-radius: 8px; }
QFrame#passage:hover { border: 1px solid palette(highlight); }
QFrame#question QLabel, QFrame#error QLabel { color: black; }
QLabel#quiet { color: palette(placeholder-text); }
"""


def _label(text: str = "", *, rich: bool = False, selectable: bool = True, quiet: bool = False) -> QLabel:
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.RichText if rich else Qt.TextFormat.PlainText)
    label.setWordWrap(True)
    if selectable:
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                      | Qt.TextInteractionFlag.TextSelectableByKeyboard)
    if quiet:
        label.setObjectName("quiet")
    label.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
    return label


def nice_day(day: str) -> str:
    try:
        return f"{date.fromisoformat(day):%a %d %b %Y}"
    except ValueError:
        return day


class Turn(QFrame):
    """One entry of the conversation; ``kind`` is question, answer, note, error or passages."""

    def __init__(self, kind: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.kind = kind
        self.setObjectName(kind)
        self.body = QVBoxLayout(self)
        self.body.setContentsMargins(12, 8, 12, 8)
        self.body.setSpacing(4)
        self.setMaximumWidth(BUBBLE_MAX_WIDTH)

    def text(self) -> str:
        return "\n".join(label.text() for label in self.findChildren(QLabel))


class TextTurn(Turn):
    """A question, an answer, a note or an error: a block of selectable text."""

    def __init__(self, kind: str, text: str = "", *, title: str = "", rich: bool = False, parent=None):
        super().__init__(kind, parent)
        self.title = _label(title, quiet=True, selectable=False) if title else None
        if self.title is not None:
            self.body.addWidget(self.title)
        self.label = _label(text, rich=rich)
        if kind == "question":
            widest = max((self.label.fontMetrics().horizontalAdvance(line) for line in text.split("\n")), default=0)
            self.label.setMinimumWidth(min(widest + 4, 460))
        self.body.addWidget(self.label)
        self.status = _label("", quiet=True, selectable=False)
        self.status.hide()
        self.body.addWidget(self.status)
        self.progress: QProgressBar | None = None
        self._pieces: list[str] = []

    # streaming --------------------------------------------------------------------------------
    def append(self, piece: str) -> None:
        if not self._pieces:
            self.set_status("")
        self._pieces.append(piece)
        self.label.setText("".join(self._pieces).lstrip())

    def set_text(self, text: str) -> None:
        self._pieces = [text]
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setText(text)

    def streamed_text(self) -> str:
        return "".join(self._pieces).strip()

    def set_status(self, text: str) -> None:
        self.status.setText(text)
        self.status.setVisible(bool(text))

    def show_progress(self, done: int, total: int) -> None:
        if self.progress is None:
            self.progress = QProgressBar()
            self.progress.setTextVisible(True)
            self.progress.setMaximumHeight(14)
            self.body.addWidget(self.progress)
        self.progress.setRange(0, max(total, 0))
        self.progress.setValue(min(done, total) if total else 0)

    def hide_progress(self) -> None:
        if self.progress is not None:
            self.progress.hide()


def passage_place(match: Match) -> str:
    """Where a passage is, after its chat's or note's title: the chat's day, or the note's headings and page."""
    return match.day if match.is_note else nice_day(match.day)


def _open_hint(match: Match) -> str:
    note = match.note
    if note is None:
        return "Open the chat at these messages"
    if note.kind == "pdf":
        return "Open the PDF" + (f" at page {note.page}" if note.page is not None else "") + " in the system's viewer"
    if note.kind == "docx":
        return "Open the Word file in the system's viewer"
    return "Open the note at this passage"


class PassageCard(QFrame):
    """One retrieved passage: chat, day and similarity, then its ``Name: text`` lines; a note's: its title,
    headings and page, then its file, then its lines. Click to open."""

    clicked = Signal(object)  # the Match

    def __init__(self, match: Match, parent=None):
        super().__init__(parent)
        self.match = match
        self.setObjectName("passage")
        self.setCursor(QCursor(Qt.CursorShape.PointingHandCursor))
        self.setToolTip(_open_hint(match))
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 6)
        layout.setSpacing(2)
        heading = (f"<b>{_escape(match.chat_title)}</b> · {_escape(passage_place(match))} · "
                   f"similarity {match.similarity:.3f}")
        self.heading = _label(heading, rich=True, selectable=False)
        layout.addWidget(self.heading)
        #: A note's file (relative to its folder); None for a chat passage.
        self.file: QLabel | None = None
        if match.note is not None:
            self.file = _label(printable(match.note.relative_path), quiet=True, selectable=False)
            layout.addWidget(self.file)
        self.lines = _label("", rich=True, selectable=False)
        # "… 8 more lines" is a link that unfolds the card in place; a click elsewhere opens the chat.
        self.lines.setTextInteractionFlags(Qt.TextInteractionFlag.LinksAccessibleByMouse)
        self.lines.setOpenExternalLinks(False)
        self.lines.linkActivated.connect(self._unfold)
        layout.addWidget(self.lines)
        #: Every line of the passage the card was given, with which of them answer.
        self.all_lines: list[PassageLine] = []
        #: The lines on the card now, with which of them answer (none marked until ``set_lines``).
        self.shown: list[PassageLine] = []
        self.unfolded = False
        self.set_lines([PassageLine(line, None) for line in (match.excerpt or match.text).split("\n")])

    def set_lines(self, lines: Sequence[PassageLine]) -> None:
        """Shows up to CARD_LINES of ``lines``, from just above the first answering one, all of those shown."""
        self.all_lines = list(lines)
        self._show()

    def highlighted_ids(self) -> list[int]:
        """The messages the card highlights (what the chat viewer highlights when the card is opened)."""
        return list(dict.fromkeys(line.message_id for line in self.all_lines if line.focus and line.message_id))

    def _show(self) -> None:
        lines = self.all_lines
        focus = [i for i, line in enumerate(lines) if line.focus]
        if self.unfolded:
            start, count = 0, len(lines)
        else:
            # The answering lines are never folded away, however many there are.
            count = max(CARD_LINES, focus[-1] - focus[0] + 1 if focus else 0)
            start = max(0, min(focus[0] - 1 if focus else 0, len(lines) - count))
            if focus and focus[-1] >= start + count:
                start = focus[0]
        self.shown = list(lines[start:start + count])
        parts = [f'<a href="unfold">… {start} earlier lines</a>'] if start else []
        parts += [self._line(line) for line in self.shown]
        if len(lines) > start + count:
            parts.append(f'<a href="unfold">… {len(lines) - start - count} more lines</a>')
        self.lines.setText("<br>".join(parts))

    def _unfold(self, _href: str = "") -> None:
        self.unfolded = True
        self._show()

    def _line(self, line: PassageLine) -> str:
        sender, sep, text = line.text.partition(": ")
        chat_line = sep and len(sender) <= 40 and not self.match.is_note  # a note's "Tip: …" names no sender
        html = f"<b>{_escape(sender)}:</b> {_escape(text)}" if chat_line else _escape(line.text)
        return f'<span style="{FOCUS_STYLE}">{html}</span>' if line.focus else html

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton and self.rect().contains(event.position().toPoint()):
            self.clicked.emit(self.match)
        super().mouseReleaseEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space):
            self.clicked.emit(self.match)
            return
        super().keyPressEvent(event)


class PassagesTurn(Turn):
    """"Found 4 passages in 2 chats", then a card per passage."""

    passage_clicked = Signal(object)

    def __init__(self, retrieval: Retrieval, search_query: str = "", question: str = "", parent=None):
        super().__init__("passages", parent)
        self.body.setContentsMargins(0, 4, 0, 4)
        heading = retrieval.describe()
        if search_query and question and search_query != question:
            heading += f" (searched for: {search_query})"
        if retrieval.unindexed:
            heading += (f" — {retrieval.unindexed} passages are not indexed for this model yet "
                        "(gallery-app-cli chat reindex)")
        for notice in retrieval.notices:
            heading += f" — {notice}"
        self.heading = _label(heading, quiet=True)
        self.body.addWidget(self.heading)
        self.cards = [PassageCard(match) for match in retrieval.matches]
        for card in self.cards:
            card.clicked.connect(self.passage_clicked)
            self.body.addWidget(card)

    def set_lines(self, lines: dict[tuple[str, int], list[PassageLine]]) -> None:
        """Per passage (``Match.key``: chat and note chunks are numbered apart), its lines with its best-matching
        ones marked."""
        for card in self.cards:
            if lines.get(card.match.key):
                card.set_lines(lines[card.match.key])


class AnswerTurn(TextTurn):
    """The answer: streamed as plain text, then shown with its citations as links to the passages."""

    #: A cited passage was clicked (the Match, as the model was given it).
    passage_clicked = Signal(object)
    #: The closest message of a decline was clicked: (chat id, message id).
    message_clicked = Signal(int, int)
    #: The closest note passage of a decline was clicked (its Match).
    note_clicked = Signal(object)

    def __init__(self, parent=None):
        super().__init__("answer", "", title="Answer", parent=parent)
        self.answer: Answer | None = None
        self.sources: list[QLabel] = []
        self.label.linkActivated.connect(self._link)

    def show_answer(self, answer: Answer) -> None:
        self.answer = answer
        if answer.declined and answer.closest is not None:
            closest = answer.closest
            html = (f"{_escape(UNSUPPORTED)}<br>Closest message: <a href=\"closest\">{_escape(closest.heading)}</a>: "
                    f"{_escape(closest.quote)}")
        elif (top := self._closest_note()) is not None:
            # "Closest note: Title (place): “line”" (core.chat.evidence.closest_note_line), its title a link.
            said = f"{top.chat_title} ({top.day})"
            prefix = f"Closest note: {said}"
            html = "<br>".join(
                f'Closest note: <a href="closest-note">{_escape(said)}</a>{_escape(line[len(prefix):])}'
                if line.startswith(prefix) else _escape(line) for line in answer.text.split("\n"))
        else:
            valid = set(answer.citations)
            html = _CITATION.sub(lambda m: f'<a href="cite:{m.group(1)}">[{m.group(1)}]</a>'
                                 if int(m.group(1)) in valid else m.group(0), _escape(answer.text))
            html = html.replace("\n", "<br>")
        self._pieces = [answer.text]
        _make_links(self.label)
        self.label.setText(html)
        for number, match in zip(answer.citations, answer.cited_matches):
            source = _label(f'<a href="cite:{number}">[{number}]</a> {_escape(match.chat_title)} · '
                            f'{_escape(passage_place(match))}', rich=True, quiet=True)
            _make_links(source)
            source.linkActivated.connect(self._link)
            self.sources.append(source)
            self.body.insertWidget(self.body.indexOf(self.status), source)

    def _link(self, href: str) -> None:
        answer = self.answer
        if answer is None:
            return
        if href == "closest" and answer.closest is not None:
            self.message_clicked.emit(answer.closest.chat_id, answer.closest.message_id)
        elif href == "closest-note" and self._closest_note() is not None:
            self.note_clicked.emit(self._closest_note())
        elif href.startswith("cite:"):
            number = int(href.removeprefix("cite:"))
            if number in answer.citations:
                self.passage_clicked.emit(answer.cited_matches[answer.citations.index(number)])


    def _closest_note(self) -> Match | None:
        """A decline's closest passage when it is a note's (the session quotes its best line)."""
        answer = self.answer
        if answer is None or not answer.declined or answer.closest is not None or not answer.retrieval.matches:
            return None
        top = answer.retrieval.matches[0]
        return top if top.is_note else None


def _make_links(label: QLabel) -> None:
    label.setTextFormat(Qt.TextFormat.RichText)
    label.setOpenExternalLinks(False)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)


class _Content(QWidget):
    """The scrolled column. Word-wrapped labels report their minimum height at a narrow width; the
    scroll area would take that as the content's minimum (blank space above the turns), so the
    content's height comes from height-for-width alone."""

    def minimumSizeHint(self) -> QSize:
        return QSize(0, 0)


class ConversationView(QScrollArea):
    """The turns, newest at the bottom; questions on the right, everything else on the left."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.content = _Content()
        self.content.setObjectName("conversation")
        self.column = QVBoxLayout(self.content)
        self.column.setContentsMargins(12, 12, 12, 12)
        self.column.setSpacing(10)
        self.column.addStretch(1)
        self.setWidget(self.content)
        self.turns: list[Turn] = []
        self._stick = True
        bar = self.verticalScrollBar()
        bar.rangeChanged.connect(self._range_changed)
        bar.valueChanged.connect(lambda value: setattr(self, "_stick", value >= bar.maximum() - 24))

    def add(self, turn: Turn, *, before: Turn | None = None) -> Turn:
        """Adds ``turn`` at the bottom, or just above ``before`` (the passages above their answer)."""
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        if turn.kind == "question":
            row.addStretch(1)
            row.addWidget(turn)
        else:
            row.addWidget(turn, 1)  # as wide as the pane allows, up to BUBBLE_MAX_WIDTH
            row.addStretch(0)
        position = self._row_index(before) if before is not None else -1
        if position >= 0:
            self.column.insertLayout(position, row)
            self.turns.insert(self.turns.index(before), turn)
        else:
            self.column.addLayout(row)
            self.turns.append(turn)
        self._stick = True
        QTimer.singleShot(0, self.scroll_to_bottom)
        return turn

    def remove(self, turn: Turn) -> None:
        position = self._row_index(turn)
        if position < 0:
            return
        self.turns.remove(turn)
        row = self.column.takeAt(position).layout()
        while row.count():
            widget = row.takeAt(0).widget()
            if widget is not None:
                widget.hide()
                widget.deleteLater()
        row.deleteLater()

    def _row_index(self, turn: Turn) -> int:
        for i in range(self.column.count()):
            row = self.column.itemAt(i).layout()
            if row is not None and row.indexOf(turn) >= 0:
                return i
        return -1

    def clear(self) -> None:
        self.turns.clear()
        while self.column.count() > 1:
            item = self.column.takeAt(1)
            layout = item.layout()
            if layout is not None:
                while layout.count():
                    widget = layout.takeAt(0).widget()
                    if widget is not None:
                        widget.hide()
                        widget.deleteLater()
                layout.deleteLater()

    def scroll_to_bottom(self) -> None:
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())

    def _range_changed(self, _low: int, high: int) -> None:
        if self._stick:
            self.verticalScrollBar().setValue(high)


class QuestionBox(QPlainTextEdit):
    """Enter sends, Shift+Enter starts a new line."""

    submitted = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setPlaceholderText("Ask about your chats and notes…  (Enter sends, Shift+Enter for a new line)")
        self.setTabChangesFocus(True)
        lines = 3
        self.setFixedHeight(self.fontMetrics().lineSpacing() * lines + 2 * self.frameWidth()
                            + int(self.document().documentMargin() * 2) + 4)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and \
                not event.modifiers() & (Qt.KeyboardModifier.ShiftModifier | Qt.KeyboardModifier.ControlModifier):
            self.submitted.emit()
            return
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.insertPlainText("\n")
            return
        super().keyPressEvent(event)
