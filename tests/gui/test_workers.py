"""Workers report progress, streamed items, results, errors and cancellation through signals."""

from __future__ import annotations

import threading

from gallery_app.core.errors import AppError, ModelError
from gallery_app.ui.workers import Worker, WorkerPool


def test_result_progress_and_off_gui_thread(qtbot):
    ran_on = []

    def work(context, n):
        ran_on.append(threading.current_thread())
        for i in range(n):
            context.progress(i + 1, n)
        return n * 2

    worker = Worker(work, 3)
    progress, results = [], []
    worker.signals.progress.connect(lambda done, total: progress.append((done, total)))
    worker.signals.result.connect(results.append)
    pool = WorkerPool()
    with qtbot.waitSignal(worker.signals.finished):
        pool.start(worker)
    assert results == [6]
    assert progress == [(1, 3), (2, 3), (3, 3)]
    assert ran_on[0] is not threading.main_thread()
    assert pool.wait(5000) and pool.active == 0


def test_generator_items_stream_and_cancel_stops_them(qtbot):
    gate = threading.Event()

    def tokens(context):
        for i in range(1000):
            if i == 3:
                gate.wait(5)
            yield f"tok{i}"

    worker = Worker(tokens)
    items = []
    worker.signals.yielded.connect(items.append)
    worker.signals.yielded.connect(lambda _item: (worker.cancel(), gate.set()) if len(items) == 3 else None)
    with qtbot.waitSignal(worker.signals.cancelled, timeout=5000):
        WorkerPool().start(worker)
    qtbot.waitUntil(lambda: len(items) >= 3)
    assert items[:3] == ["tok0", "tok1", "tok2"] and len(items) < 10


def test_errors_arrive_as_app_errors(qtbot):
    def fails(context):
        raise ModelError("The model is damaged.")

    def bug(context):
        return {}["missing"]

    for function, expected in ((fails, "The model is damaged."), (bug, "Something went wrong: KeyError")):
        worker = Worker(function)
        with qtbot.waitSignal(worker.signals.error) as blocker:
            WorkerPool().start(worker)
        error = blocker.args[0]
        assert isinstance(error, AppError) and str(error).startswith(expected)


def test_a_finished_worker_lets_go_of_its_arguments(qtbot):
    """Before: PySide's pool kept every runnable, and with it every argument (camera frames, photo lists)."""
    import gc
    import weakref

    from PySide6.QtCore import QThreadPool

    class Payload:
        pass

    pool = WorkerPool(QThreadPool())
    refs = []
    for _ in range(20):
        payload = Payload()
        refs.append(weakref.ref(payload))
        pool.start(Worker(lambda context, data: None, payload))
        del payload
    assert pool.wait(10_000)
    qtbot.wait(50)
    gc.collect()
    assert sum(ref() is not None for ref in refs) == 0


def test_active_is_exact_right_after_wait(qtbot):
    """Before: the pool forgot a worker in a slot queued after `finished`; wait() returned with it still counted."""
    pool = WorkerPool()
    delivered = []
    for i in range(50):
        worker = Worker(lambda context, n: n, i)
        worker.signals.result.connect(delivered.append)
        pool.start(worker)
    assert pool.wait(10_000)
    assert pool.active == 0
    assert sorted(delivered) == list(range(50))  # every result was delivered before wait() returned


def test_writers_take_turns_and_readers_run_beside_them(qtbot):
    """Two jobs that write never overlap (the second starts after the first ends); a reader does not wait."""
    first_may_end, reader_ran = threading.Event(), threading.Event()
    events = []

    def write(context, name, gate=None):
        events.append(f"{name} start")
        if gate is not None:
            assert gate.wait(5)
        events.append(f"{name} end")

    pool = WorkerPool()
    first = pool.start(Worker(write, "import", first_may_end).writing("the chat import"))
    qtbot.waitUntil(lambda: events == ["import start"], timeout=5000)
    second = pool.start(Worker(write, "index").writing("adding photos"))
    assert second.waiting_for is first and first.waiting_for is None
    reader = pool.start(Worker(lambda context: reader_ran.set()))
    qtbot.waitUntil(reader_ran.is_set, timeout=5000)  # ran while the import still writes
    assert events == ["import start"] and second.waiting_for is first
    first_may_end.set()
    assert pool.wait(10_000) and pool.active == 0
    assert events == ["import start", "import end", "index start", "index end"]
    assert reader.waiting_for is None and second.waiting_for is None


def test_a_queued_writer_cancelled_ends_at_once_without_running(qtbot):
    gate = threading.Event()
    ran = []
    pool = WorkerPool()
    pool.start(Worker(lambda context: gate.wait(5)).writing("the chat import"))
    queued = Worker(lambda context: ran.append("queued"))
    queued.writing("adding photos")
    pool.start(queued)
    with qtbot.waitSignal(queued.signals.cancelled, timeout=2000):
        queued.cancel()  # while the first writer still runs
    assert not gate.is_set() and ran == []
    then = pool.start(Worker(lambda context: ran.append("next")).writing("adding photos"))
    gate.set()
    assert pool.wait(10_000) and pool.active == 0
    assert ran == ["next"] and not then.is_cancelled


def test_pool_threads_run_below_the_gui_thread_and_hand_the_gil_back_quickly(qtbot):
    """Before: jobs ran at the GUI thread's priority with the GIL's 5 ms turns, and the window stalled
    for 50-120 ms during a chat import (one repaint waits for the GIL many times)."""
    import os
    import sys

    from gallery_app.ui.workers import GIL_SWITCH_INTERVAL_S

    pool = WorkerPool()
    worker = Worker(lambda context: os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
    niceness = []
    worker.signals.result.connect(niceness.append)
    with qtbot.waitSignal(worker.signals.finished):
        pool.start(worker)
    assert sys.getswitchinterval() <= GIL_SWITCH_INTERVAL_S
    if sys.platform.startswith("linux"):
        gui = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        assert niceness[0] > gui or gui == 19  # (a process started at nice 19 cannot go lower)
    assert pool.wait(5000)


def test_a_job_that_finished_before_its_cancel_arrived_reports_its_result(qtbot):
    """Before: a Cancel pressed as the job committed its last step made the window say "cancelled,
    nothing was changed" about work that was done (an import, a switch of text embedder)."""
    committed = threading.Event()
    cancelled_now = threading.Event()

    def commits(context):
        committed.set()
        cancelled_now.wait(5)  # the Cancel arrives after the last step, before the function returns
        return "done"

    worker = Worker(commits)
    results, cancels = [], []
    worker.signals.result.connect(results.append)
    worker.signals.cancelled.connect(lambda: cancels.append(True))
    pool = WorkerPool()
    with qtbot.waitSignal(worker.signals.finished, timeout=5000):
        pool.start(worker)
        assert committed.wait(5)
        worker.cancel()
        cancelled_now.set()
    assert results == ["done"] and cancels == []
    assert pool.wait(5000)
