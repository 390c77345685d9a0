"""Guards against a Qt binding that leaks references to True/False/None (PySide6 6.12.0 on Python 3.11):
every signal emit or QRunnable start then takes one away, and a long session aborts in bool_dealloc."""

from __future__ import annotations

import sys

from PySide6.QtCore import QObject, QThreadPool, Signal

from gallery_app.ui.workers import Worker


class _Emitter(QObject):
    flag = Signal(bool)


def test_signals_and_workers_keep_the_reference_counts_of_true_false_and_none(qtbot):
    emitter = _Emitter()
    emitter.flag.connect(lambda value: None)
    before = {name: sys.getrefcount(value) for name, value in (("True", True), ("False", False), ("None", None))}
    for _ in range(2000):
        emitter.flag.emit(False)
        emitter.flag.emit(True)
    pool = QThreadPool()
    workers = [Worker(lambda context: None) for _ in range(200)]
    for worker in workers:
        pool.start(worker)
    assert pool.waitForDone(10_000)
    del workers
    after = {name: sys.getrefcount(value) for name, value in (("True", True), ("False", False), ("None", None))}
    # A lost reference lowers the count for good (thousands here); objects still alive only raise it.
    for name in before:
        assert after[name] > before[name] - 100, (name, before[name], after[name])
