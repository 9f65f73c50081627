"""A thread-safe log of what a process wrote, that tests wait on (never on fixed sleeps).

A reader thread `add`s each parsed line and `close`s at end of input; tests `wait` for the
first item after a mark that matches a predicate. Used by the sidecar peer and the pi RPC
session helpers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Collected(Generic[T]):
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.items: list[T] = []
        self.eof = False

    def add(self, item: T) -> None:
        with self._cond:
            self.items.append(item)
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self.eof = True
            self._cond.notify_all()

    def mark(self) -> int:
        with self._cond:
            return len(self.items)

    def matching(self, pred: Callable[[T], bool]) -> list[T]:
        with self._cond:
            return [item for item in self.items if pred(item)]

    def wait(
        self,
        pred: Callable[[T], bool],
        timeout: float,
        *,
        after: int = 0,
        describe: Callable[[list[T]], str] = lambda items: repr(items[-10:]),
    ) -> T:
        """The first item from `after` on that matches; AssertionError at timeout or EOF."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for item in self.items[after:]:
                    if pred(item):
                        return item
                left = deadline - time.monotonic()
                if left <= 0 or self.eof:
                    raise AssertionError(f"never came: {describe(self.items)}")
                self._cond.wait(left)

    def wait_eof(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self.eof:
                left = deadline - time.monotonic()
                assert left > 0, "the stream did not end"
                self._cond.wait(left)
