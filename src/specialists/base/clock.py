"""Doubles shared by every room's tests: a clock that moves only when told to.

Production code reads time through a plain `Callable[[], float]` (time.monotonic by
default) and, where it waits, through a sleep function. `FakeClock` is both: calling it reads
the time, `sleep` and `advance` move it at once. Give the same instance to the code under
test and to its doubles (the scripted runner, a fake timer store) and every timer runs on
one timeline with no real waiting, however busy the machine is.
"""

from __future__ import annotations

import time
from typing import Protocol


class SleepingClock(Protocol):
    """A clock that can also wait: the part of `time` a double needs."""

    def __call__(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The real thing, for doubles used in real time (e.g. threads in interface tests)."""

    def __call__(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))


class FakeClock:
    """Monotonic seconds that advance only by `sleep` or `advance`; never goes back."""

    def __init__(self, start: float = 1000.0) -> None:
        self._now = float(start)
        self.slept = 0.0  # total time spent in sleep(), for tests that check waiting

    def __call__(self) -> float:
        return self._now

    @property
    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"a clock cannot go back ({seconds} s)")
        self._now += seconds

    def sleep(self, seconds: float) -> None:
        seconds = max(0.0, seconds)
        self.slept += seconds
        self._now += seconds
