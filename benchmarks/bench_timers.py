"""Timers: re-arming 1,000 pending timers after a restart (target < 100 ms) and how late a
timer fires when a front waits on it (target p99 < 50 ms)."""

from __future__ import annotations

import random
import statistics
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.common import machine
from specialists.events.inbox import Inbox
from specialists.events.model import EventSource
from specialists.events.timers import TimerStore
from specialists.events.wake import wait_for_wake

SRC = EventSource("sleep")


def rearm(n: int = 1000, rounds: int = 15) -> None:
    root = Path(tempfile.mkdtemp(prefix="sp-bench-timers-")) / ".specialists"
    store = TimerStore(root, "job-0123abcd", max_pending=n)
    now = int(time.time() * 1000)
    for i in range(n):
        store.set(now + 3_600_000 + i, now_ms=now, source=SRC)
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        pending = TimerStore(root, "job-0123abcd").pending()  # what a restarted front does
        times.append((time.perf_counter() - t0) * 1000)
        assert len(pending) == n
    median = statistics.median(times)
    print(f"re-arm {n} pending timers: median {median:.1f} ms (max {max(times):.1f})")


def lateness(n: int = 200, spread_s: float = 4.0) -> None:
    root = Path(tempfile.mkdtemp(prefix="sp-bench-timers-")) / ".specialists"
    owner = "claude-bench"
    store = TimerStore(root, owner, max_pending=n)
    start = time.time()
    dues = sorted(start + 0.2 + random.random() * spread_s for _ in range(n))
    for due in dues:
        store.set(int(due * 1000), now_ms=int(start * 1000), source=SRC)
    late: list[float] = []
    inbox = Inbox(root, owner)
    stop = threading.Event()
    while len(late) < n:
        wait_for_wake(root, owner, 10, until=stop.is_set)
        got = time.time()
        late.extend(got * 1000 - e.details["due_ms"] for e in inbox.take().events)
    late.sort()
    p99 = late[int(len(late) * 0.99) - 1]
    print(
        f"timer lateness over {n} timers: median {statistics.median(late):.1f} ms, "
        f"p99 {p99:.1f} ms, max {late[-1]:.1f} ms"
    )


def main() -> None:
    print(f"# timers — {machine()}")
    rearm()
    lateness()


if __name__ == "__main__":
    main()
