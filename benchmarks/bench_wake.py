"""The native front's wake path: event written to an owner's inbox -> the woken model's
request (target p90 < 100 ms), a timer's due time -> that request, and what a waiting
supervisor costs while nothing happens.

One native job under the real Supervisor and NativeRunner (its loop thread, its tools) in
this process, with a ScriptedModel that stamps each request. The agent sets an hour-long
timer (pending work, so it waits), then yields on `sleep_until_event` after every wake-up; a
producer appends one event at a time to `job-<id>`'s inbox and waits for the request that
carries it.
"""

from __future__ import annotations

import os
import resource
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from benchmarks.common import machine
from specialists.catalog.config import Config
from specialists.events import notices
from specialists.events.inbox import Inbox
from specialists.events.model import EventSource
from specialists.events.timers import TimerStore
from specialists.native.model import ModelRequest, StreamEvent
from specialists.native.testing import ScriptedModel, call, reply, reply_events
from specialists.runners.native import NativeRunner
from specialists.store.jobs import JobStore, now_ms
from specialists.store.records import JobRecord
from specialists.supervise.launch import create_job
from specialists.supervise.supervisor import Supervisor
from specialists.supervise.wake import WAITING_EVENT

SRC = EventSource("bg_run", "bench")
TIMERS = 40


class Stamps:
    """When each event's request reached the model: body marker -> monotonic time."""

    def __init__(self) -> None:
        self.seen: dict[str, float] = {}
        self.cond = threading.Condition()

    def entry(self, request: ModelRequest) -> Iterator[StreamEvent]:
        got = time.monotonic()
        last = request.items[-1]
        text = getattr(last, "text", "")
        with self.cond:
            for word in text.split():
                if word.startswith("bench-"):
                    self.seen[word] = got
            self.cond.notify_all()
        return reply_events(reply(calls=[call("sleep_until_event")]))

    def wait(self, marker: str, timeout: float = 30) -> float:
        with self.cond:
            if not self.cond.wait_for(lambda: marker in self.seen, timeout):
                raise RuntimeError(f"{marker} never reached the model")
            return self.seen[marker]


def start_job(root: Path, stamps: Stamps, n: int) -> tuple[Supervisor, threading.Thread, str]:
    store = JobStore(root / ".specialists", news=notices)
    cwd = root / "work"
    cwd.mkdir(parents=True, exist_ok=True)
    record = JobRecord(
        id="",
        specialist="bench",
        prompt="wait for events",
        task="wait for events",
        runner="native",
        model="test/main",
        cwd=str(cwd),
        created_at_ms=now_ms(),
        idle_timeout_ms=3_600_000,
    )
    record, lock = create_job(store, record)
    model = ScriptedModel([reply(calls=[call("sleep", seconds=3600)]), *([stamps.entry] * (n + 2))])
    runner = NativeRunner(config=Config(raw={}), clients={"test/main": model})
    supervisor = Supervisor(store, record, runner, handle_signals=False)

    def run() -> None:
        try:
            supervisor.run()
        finally:
            lock.release()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return supervisor, thread, record.id


def wait_idle(store: JobStore, job_id: str, timeout: float = 30) -> None:
    """Until the job waits for its pending work (status stays running; current_event says)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = store.read_status(job_id)
        if st is not None and st.current_event == WAITING_EVENT:
            return
        time.sleep(0.01)
    raise RuntimeError(f"job {job_id} never waited for events")


def wake_latency(n: int = 60) -> None:
    root = Path(tempfile.mkdtemp(prefix="sp-bench-wake-"))
    stamps = Stamps()
    supervisor, thread, job_id = start_job(root, stamps, n + TIMERS + 5)
    store = supervisor.store
    owner = f"job-{job_id}"
    inbox = Inbox(store.root, owner)
    wait_idle(store, job_id)
    idle_cpu = idle_cost(store, job_id)
    delays: list[float] = []
    for i in range(n):
        wait_idle(store, job_id)
        time.sleep(0.013 * (i % 8))  # land at different points of the supervisor's poll
        marker = f"bench-{i}"
        t0 = time.monotonic()
        inbox.append("job_exit", SRC, f"exit 0 {marker}", source_id="bench", seq=i + 1)
        delays.append((stamps.wait(marker) - t0) * 1000)
    timer_delays = timer_latency(store, owner, job_id, stamps)
    from specialists.store.control import post_request

    post_request(store.job_dir(job_id), "stop", "")
    thread.join(30)
    delays.sort()
    p90 = delays[int(len(delays) * 0.9) - 1]
    print(
        f"native: event written -> woken model request over {n} events: median "
        f"{statistics.median(delays):.1f} ms, p90 {p90:.1f} ms, max {delays[-1]:.1f} ms"
    )
    timer_delays.sort()
    p99 = timer_delays[max(0, int(len(timer_delays) * 0.99) - 1)]
    print(
        f"native: timer due -> woken model request over {len(timer_delays)} timers: median "
        f"{statistics.median(timer_delays):.1f} ms, p99 {p99:.1f} ms, max {timer_delays[-1]:.1f} ms"
    )
    print(f"native: waiting supervisor, nothing happening: {idle_cpu:.1f}% of one core")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"benchmark process peak RSS (supervisor + loop + model double): {rss:.0f} MB")


def timer_latency(store: JobStore, owner: str, job_id: str, stamps: Stamps) -> list[float]:
    timers = TimerStore(store.root, owner)
    out: list[float] = []
    for i in range(TIMERS):
        wait_idle(store, job_id)
        marker = f"bench-t{i}"
        due = time.time() + 0.3
        timers.set(int(due * 1000), now_ms=now_ms(), note=marker, source=EventSource("sleep"))
        got = stamps.wait(marker)
        out.append((got - (time.monotonic() - (time.time() - due))) * 1000)
    return out


def idle_cost(store: JobStore, job_id: str, seconds: float = 5.0) -> float:
    """CPU of this process (the waiting supervisor and an idle loop thread) over a quiet wait."""
    t0, c0 = time.monotonic(), os.times()
    time.sleep(seconds)
    c1 = os.times()
    used = (c1.user - c0.user) + (c1.system - c0.system)
    return used / (time.monotonic() - t0) * 100


def main() -> None:
    print(f"# wake (native front) — {machine()}")
    wake_latency()


if __name__ == "__main__":
    main()
