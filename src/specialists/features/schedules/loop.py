"""The long-running scheduler: fire what is due, sleep until the next slot, repeat.

It keeps nothing in memory that matters: every decision is re-read from the store, and every
firing is a keyed start (fire.py), so a restart, a kill -9 mid-firing or a second scheduler on the
same project never fires a slot twice. It wakes at least every `MAX_WAIT_S` to notice
schedules created meanwhile (a clock set back wakes it at once, rather than leaving it asleep
for the jump), and sleeps in short steps so a stop request is seen at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from specialists.features.schedules.fire import RunDueReport, run_due
from specialists.features.schedules.store import ScheduleStore
from specialists.store.jobs import JobStore

MAX_WAIT_S = 30.0
STEP_S = 0.5  # the longest a stop request waits to be seen
MIN_WAIT_S = 0.01
SET_BACK_S = 1.0  # the wall clock went back more than this during a wait: look again now


def wake_in_s(report: RunDueReport, now_ms: int, max_wait_s: float = MAX_WAIT_S) -> float:
    """Seconds until the soonest slot the pass saw still to come, at most `max_wait_s`
    (paused schedules' past slots are not "to come": they never make the loop spin)."""
    if report.next_due_ms is None:
        return max_wait_s
    return max(MIN_WAIT_S, min(max_wait_s, (report.next_due_ms - now_ms) / 1000))


def serve(
    store: ScheduleStore,
    jobs: JobStore,
    *,
    stop: Callable[[], bool],
    on_report: Callable[[RunDueReport], None],
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    max_wait_s: float = MAX_WAIT_S,
    warnings: list[str] | None = None,
) -> int:
    """Run until `stop()`; the number of passes made. Warnings of each pass go to
    `warnings` before `on_report` sees the pass."""
    passes = 0
    while not stop():
        report = run_due(store, jobs, int(clock() * 1000), warnings)
        passes += 1
        on_report(report)
        wait = wake_in_s(report, int(clock() * 1000), max_wait_s)
        deadline = clock() + wait
        while not stop():
            left = deadline - clock()
            if left <= 0 or left > wait + SET_BACK_S:  # due, or the clock was set back
                break
            sleep(min(STEP_S, left))
    return passes
