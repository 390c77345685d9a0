"""Kills the language model's child process in the middle of an answer, as a native crash would."""

from __future__ import annotations

import os
import signal

from gallery_app.core.models.runtimes import llama_process


def crash_in_the_next_answer(monkeypatch, sig: signal.Signals) -> list[int]:
    """The next completion's child receives ``sig`` right after its first piece reaches the parent.

    Returns the list that gets the killed child's pid: the answers after it run as usual."""
    original = llama_process.LlamaProcess.complete
    killed: list[int] = []

    def complete(self, *args, **kwargs):
        for piece in original(self, *args, **kwargs):
            yield piece
            if not killed:
                killed.append(self.pid)
                os.kill(self.pid, sig)
                self._process.join(10)  # dead before the parent reads again, as after a real crash

    monkeypatch.setattr(llama_process.LlamaProcess, "complete", complete)
    return killed
