"""The time left shown beside long jobs' progress (chat import, photo indexing, downloads)."""

from __future__ import annotations

from gallery_app.core.eta import TimeLeft, describe_time_left


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_time_left_follows_the_rate_so_far():
    clock = Clock()
    time_left = TimeLeft(clock)
    assert time_left.update(0, 1000) is None
    clock.now += 1
    assert time_left.update(50, 1000) is None  # too early to tell
    clock.now += 9
    assert time_left.update(500, 1000) == 10.0
    assert describe_time_left(10.0) == "about 10 s left"


def test_a_new_job_on_the_same_bar_starts_a_new_estimate():
    clock = Clock()
    time_left = TimeLeft(clock)
    time_left.update(0, 10)
    clock.now += 5
    assert time_left.update(5, 10) == 5.0
    assert time_left.update(1, 200) is None


def test_wording():
    assert describe_time_left(None) == ""
    assert describe_time_left(2) == "about 5 s left"
    assert describe_time_left(150) == "about 2 min left"
    assert describe_time_left(2 * 3600 + 5 * 60) == "about 2 h 05 min left"
