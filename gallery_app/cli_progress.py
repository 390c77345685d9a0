"""What the commands write on a terminal: the one-line progress bar, and text from chats made safe to print."""

from __future__ import annotations

import re
import sys

from gallery_app.core.eta import TimeLeft, describe_time_left
from gallery_app.core.units import describe_size


class ProgressBar:
    """A one-line progress bar on stderr, redrawn at most once per percent."""

    def __init__(self, label: str, stream=None, unit: str = "MB"):
        self.label = label
        self.stream = stream or sys.stderr
        self.unit = unit
        self._last = -1
        self._time_left = TimeLeft()
        self._width = 0

    def __call__(self, done: int, total: int) -> None:
        percent = int(done * 100 / total) if total else 0
        seconds_left = self._time_left.update(done, total)
        if percent == self._last:
            return
        self._last = percent
        filled = percent // 4
        amount = (f"{describe_size(done)}/{describe_size(total)}" if self.unit == "MB"
                  else f"{done:,}/{total:,} {self.unit}")
        left = describe_time_left(seconds_left) if done < total else ""
        line = f"{self.label} [{'#' * filled}{'.' * (25 - filled)}] {percent:3d}% {amount}{', ' + left if left else ''}"
        # Spaces rub out the end of a longer previous line ("…, about 2 min left").
        self.stream.write("\r" + line.ljust(self._width))
        self._width = len(line)
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\n")


#: Control characters (escape sequences among them) in chat text or an answer are shown, never obeyed.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_text(text: str) -> str:
    """``text`` (a chat's, a model's) as it may be printed: control characters become \ufffd, tabs spaces."""
    return _CONTROL.sub("\ufffd", text.replace("\t", " "))
