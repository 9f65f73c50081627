"""The waiting loops fronts and supervisors use: fire due timers, return when the owner has events.

Sleeps exactly until the next timer is due when that is sooner than the inbox poll, so a
timer fires within a few milliseconds of its time (the p99 target is 50 ms).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from specialists.base.errors import SpecialistsError
from specialists.base.lazy import logger
from specialists.events.inbox import WAIT_INTERVAL_S
from specialists.events.multi import OwnerSet
from specialists.events.timers import TimerStore

log = logger("specialists.features.timers")


def fire_due(state_root: Path, owner: str, *, now: Callable[[], float] = time.time) -> int:
    """Fire what is due for `owner` now; the number of timers fired."""
    return len(TimerStore(state_root, owner).fire_due(int(now() * 1000)))


def wait_for_wake(
    state_root: Path,
    owner: str,
    timeout_s: float,
    *,
    now: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    until: Callable[[], bool] | None = None,
) -> bool:
    """Up to `timeout_s`: fire due timers; True as soon as the inbox has events.

    `until()` ends the wait early (False), e.g. when the waiting job was stopped.
    """
    return WakeWatch(state_root, owner).wait(timeout_s, now=now, sleep=sleep, until=until)


class WakeWatch:
    """One owner's wake-ups, watched across many waits (a supervisor step every 100 ms,
    `specialists events --follow`). The timer file is parsed again only when it changed (a
    stat: inode, size, mtime) or a timer came due, so a long wait costs a stat and the inbox
    check per poll, not a parse of every timer record (bench_wake: 1% of a core while
    nothing happens)."""

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
            step = _step(current, deadline, (self._due_ms,))
            if step is None:
                return False
            sleep(step)


_Stamp = tuple[int, int, int] | None


def _stamp(path: Path) -> _Stamp:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def wait_for_any(
    owners: OwnerSet,
    timeout_s: float,
    *,
    now: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    until: Callable[[], bool] | None = None,
) -> bool:
    """`wait_for_wake` for a reader with several keys (events.multi): fires every key's due
    timers, True as soon as any of the inboxes has events."""
    stores = [TimerStore(owners.state_root, key) for key in owners.keys]
    deadline = now() + max(0.0, timeout_s)
    while True:
        current = now()
        dues = []
        for store in list(stores):
            try:
                store.fire_due(int(current * 1000))
                dues.append(store.next_due_ms())
            except (OSError, SpecialistsError) as exc:  # a planted file: the other keys go on
                log.warning("timers of %s left out of the wait: %s", store.owner, exc)
                stores.remove(store)
        if owners.has_pending():
            return True
        if until is not None and until():
            return False
        step = _step(current, deadline, dues)
        if step is None:
            return False
        sleep(step)


def _step(current: float, deadline: float, dues: Iterable[int | None]) -> float | None:
    """How long to sleep before the next look (None: the wait is over): at most
    WAIT_INTERVAL_S, and never past the deadline or the next timer's due time."""
    left = deadline - current
    if left <= 0:
        return None
    step = min(WAIT_INTERVAL_S, left)
    for due in dues:
        if due is not None:
            step = min(step, max(0.0, due / 1000 - current))
    return step
