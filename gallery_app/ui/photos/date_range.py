"""The grid's range of days: "Dates" ticked limits the grid and every search to the days from one to another.

Unticked, nothing is limited. Ticked for the first time, the range is the gallery's whole timeline
(so ticking alone hides nothing and the person narrows from there). Typing a date changes it one
digit at a time, so a change is applied once the editing pauses.
"""

from __future__ import annotations

from datetime import date

from PySide6.QtCore import QDate, QTimer, Signal
from PySide6.QtWidgets import QCheckBox, QDateEdit, QHBoxLayout, QLabel, QWidget

from gallery_app.ui.plain_text import tooltip

#: How long the range waits after the last keystroke or arrow press before it is applied.
SETTLE_MS = 400
_INVALID_STYLE = "QDateEdit { border: 1px solid #c0392b; }"


def describe_days(since: date | None, until: date | None) -> str:
    """"from 1 May 2024 to 31 May 2024", "on 18 May 2024", "since …", "until …", or "" without a limit."""
    def day(d: date) -> str:
        return f"{d.day} {d:%b %Y}"

    if since and until:
        return f"on {day(since)}" if since == until else f"from {day(since)} to {day(until)}"
    if since:
        return f"since {day(since)}"
    return f"until {day(until)}" if until else ""


def _qdate(day: date) -> QDate:
    return QDate(day.year, day.month, day.day)


class DateRangeBar(QWidget):
    """``changed()`` whenever the range to apply changes; ``days()`` → (first, last), None when not limited."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.toggle = QCheckBox("Dates")
        self.toggle.setToolTip("Show and search only the photos taken between two days")
        self.since_edit = QDateEdit()
        self.until_edit = QDateEdit()
        today = date.today()
        for edit, tip in ((self.since_edit, "First day shown"), (self.until_edit, "Last day shown")):
            edit.setCalendarPopup(True)
            edit.setDisplayFormat("d MMM yyyy")
            edit.setDate(_qdate(today))
            edit.setToolTip(tip)
            edit.setEnabled(False)
            edit.dateChanged.connect(self._edited)
        self._settle = QTimer(self)
        self._settle.setSingleShot(True)
        self._settle.setInterval(SETTLE_MS)
        self._settle.timeout.connect(self.changed)
        self.toggle.toggled.connect(self._toggled)

        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.toggle)
        layout.addWidget(self.since_edit)
        layout.addWidget(QLabel("–"))
        layout.addWidget(self.until_edit)

    @property
    def limited(self) -> bool:
        return self.toggle.isChecked()

    def days(self) -> tuple[date | None, date | None]:
        if not self.limited:
            return None, None
        return self.since_edit.date().toPython(), self.until_edit.date().toPython()

    def set_days(self, since: date, until: date) -> None:
        """Limit to ``since``…``until`` at once (as if chosen and settled)."""
        self._set_edits(since, until)
        if self.limited:
            self._settle.stop()
            self.changed.emit()
        else:
            self.toggle.setChecked(True)  # emits changed

    def clear(self) -> None:
        """No limit: every day shows again."""
        self.toggle.setChecked(False)

    def suggest(self, first: date | None, last: date | None) -> None:
        """The range offered when the person ticks "Dates": the gallery's first and last day."""
        if not self.limited and first is not None and last is not None:
            self._set_edits(first, last)

    def mark_invalid(self, problem: str | None) -> None:
        """Outline both dates in red with ``problem`` as their tooltip, or back to normal with None."""
        for edit, tip in ((self.since_edit, "First day shown"), (self.until_edit, "Last day shown")):
            edit.setStyleSheet(_INVALID_STYLE if problem else "")
            edit.setToolTip(tooltip(problem) if problem else tip)

    def _set_edits(self, since: date, until: date) -> None:
        for edit, day in ((self.since_edit, since), (self.until_edit, until)):
            edit.blockSignals(True)
            edit.setDate(_qdate(day))
            edit.blockSignals(False)

    def _toggled(self, on: bool) -> None:
        for edit in (self.since_edit, self.until_edit):
            edit.setEnabled(on)
        self._settle.stop()
        if not on:
            self.mark_invalid(None)
        self.changed.emit()

    def _edited(self, _day: QDate) -> None:
        if self.limited:
            self._settle.start()
