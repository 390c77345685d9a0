"""How long a job has left, from how fast it has gone so far."""

from __future__ import annotations

import time
from collections.abc import Callable

#: No estimate before this much time and progress: the first batches say little about the rest.
MIN_SECONDS = 2.0


class TimeLeft:
    """Estimates the seconds left from ``done`` of ``total`` so far (the rate since the first report).

    The work must come in an order whose rate is representative (the importer embeds its
    length-sorted batches in a shuffled order for this reason).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._start: tuple[float, int] | None = None
        self._last: tuple[int, int] = (0, 0)

    def update(self, done: int, total: int) -> float | None:
        now = self._clock()
        last_done, last_total = self._last
        self._last = (done, total)
        if self._start is None or done < last_done or total != last_total:
            self._start = (now, done)  # a new job, or the same bar reused for another stage
            return None
        elapsed, progressed = now - self._start[0], done - self._start[1]
        if elapsed < MIN_SECONDS or progressed <= 0 or total <= 0:
            return None
        return max(0.0, (total - done) * elapsed / progressed)


def describe_duration(seconds: float) -> str:
    if seconds < 60:
        return f"about {max(5, round(seconds / 5) * 5):.0f} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"about {minutes} min"
    return f"about {minutes // 60} h {minutes % 60:02d} min"


def describe_time_left(seconds: float | None) -> str:
    return "" if seconds is None else describe_duration(seconds) + " left"
