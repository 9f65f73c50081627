"""The one waiting loop fronts use: fire due timers, return when the owner has events.

Sleeps exactly until the next timer is due when that is sooner than the inbox poll, so a
timer fires within a few milliseconds of its time (the p99 target is 50 ms).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from specialists.errors import SpecialistsError
from specialists.events.inbox import WAIT_INTERVAL_S
from specialists.events.multi import OwnerSet
from specialists.timers.store import TimerStore

log = logging.getLogger("specialists.timers")


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
    store = TimerStore(state_root, owner)
    deadline = now() + max(0.0, timeout_s)
    while True:
        current = now()
        store.fire_due(int(current * 1000))
        if store.inbox.has_pending():
            return True
        if until is not None and until():
            return False
        step = _step(current, deadline, (store.next_due_ms(),))
        if step is None:
            return False
        sleep(step)


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
