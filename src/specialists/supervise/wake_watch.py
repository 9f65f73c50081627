"""An owner's wake-ups watched across many waits: the supervisor's wait for its job.

`WakeWatch.wait` is `timers.wake.wait_for_wake` for a waiter that looks again and again (a
supervisor step every 100 ms, `specialists events --follow`): it fires due timers and returns
as soon as the inbox has events, sleeping exactly until the next timer's due time when that is
sooner than the inbox poll. The timer file is parsed again only when it changed (a stat:
inode, size, mtime) or a timer came due, so a long wait costs a stat and the inbox check per
poll, not a parse of every timer record (bench_wake: 1% of a core while nothing happens).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from specialists.events.inbox import WAIT_INTERVAL_S
from specialists.timers.store import TimerStore

_Stamp = tuple[int, int, int] | None


class WakeWatch:
    """One owner's wake-ups, watched across many waits (a supervisor's steps)."""

    def __init__(self, state_root: Path, owner: str) -> None:
        self.store = TimerStore(state_root, owner)
        self._stamp: _Stamp = None
        self._read = False
        self._due_ms: int | None = None

    @property
    def next_due_ms(self) -> int | None:
        """The earliest pending timer as of the last look (wall-clock ms)."""
        return self._due_ms

    def look(self, now_ms: int) -> None:
        """Fire what is due, reading the timer file only if it changed or a timer is due."""
        stamp = _stamp(self.store.path)
        due = self._due_ms
        if self._read and stamp == self._stamp and (due is None or now_ms < due):
            return
        self.store.fire_due(now_ms)  # a no-op (and no lock) while there is no timer file
        self._stamp, self._read = stamp, True  # taken before the read: a later write is seen
        self._due_ms = self.store.next_due_ms() if stamp is not None else None

    def wait(
        self,
        timeout_s: float,
        *,
        now: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        until: Callable[[], bool] | None = None,
    ) -> bool:
        """Up to `timeout_s`: fire due timers; True as soon as the inbox has events.

        `until()` ends the wait early (False), e.g. when the waiting job was stopped.
        """
        deadline = now() + max(0.0, timeout_s)
        while True:
            current = now()
            self.look(int(current * 1000))
            if self.store.inbox.has_pending():
                return True
            if until is not None and until():
                return False
            left = deadline - current
            if left <= 0:
                return False
            step = min(WAIT_INTERVAL_S, left)
            if self._due_ms is not None:
                step = min(step, max(0.0, self._due_ms / 1000 - current))
            sleep(step)


def _stamp(path: Path) -> _Stamp:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)
