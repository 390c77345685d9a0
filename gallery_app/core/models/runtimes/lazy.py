"""One model session, created on first use and released on demand, safe across threads."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Lazy(Generic[T]):
    def __init__(self, create: Callable[[], T], close: Callable[[T], None] | None = None):
        self._create = create
        self._close = close
        self._value: T | None = None
        self._lock = threading.Lock()

    def get(self) -> T:
        with self._lock:
            if self._value is None:
                self._value = self._create()
            return self._value

    @property
    def loaded(self) -> bool:
        return self._value is not None

    @property
    def current(self) -> T | None:
        """The value if it was created, without creating it."""
        return self._value

    def release(self) -> None:
        with self._lock:
            value, self._value = self._value, None
        if value is not None and self._close is not None:
            self._close(value)
