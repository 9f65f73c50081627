"""Waiting in tests: on a condition, with a generous deadline, never for a fixed time.

The machine that runs the suite may be busy (two cores, several suites at once), so a
deadline is a bound on a hang, not a speed target: `wait_until` returns as soon as the
condition holds and fails only when it has not held for `timeout` seconds. Timer logic does
not belong here at all: it runs on `specialists.base.clock.FakeClock`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 60.0
_INTERVAL_S = 0.02


def wait_until(
    condition: Callable[[], T | bool | None],
    timeout: float = DEFAULT_TIMEOUT_S,
    what: str = "the condition",
    interval: float = _INTERVAL_S,
) -> T:
    """Poll `condition` until it returns something truthy, and return that."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value  # type: ignore[return-value]
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(interval)
