"""Measures how long the GUI thread goes without getting back to its event loop.

A precise timer fires every few milliseconds; the longest time between two firings is the longest
the window could not repaint or react. Used by the tests (and `--self-test`) to prove that imports
and indexing never freeze the window.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QObject, Qt, QTimer


class EventLoopProbe(QObject):
    def __init__(self, interval_ms: int = 5, parent: QObject | None = None):
        super().__init__(parent)
        self.interval_ms = interval_ms
        self._timer = QTimer(self)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self._tick)
        self._last: float | None = None
        self.longest_gap_ms = 0.0
        self.ticks = 0

    def start(self) -> None:
        self._last = None
        self.longest_gap_ms = 0.0
        self.ticks = 0
        self._timer.start()

    def stop(self) -> float:
        self._timer.stop()
        return self.longest_gap_ms

    def _tick(self) -> None:
        now = time.perf_counter()
        if self._last is not None:
            self.longest_gap_ms = max(self.longest_gap_ms, (now - self._last) * 1000)
        self._last = now
        self.ticks += 1
