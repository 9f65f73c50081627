"""Attention on the supervisor's hot path: what `saw` (every agent event) and `tick` (every
loop step) cost, alone and as a share of handling an event in a real Supervisor.

Target: the decision adds under 2 microseconds per event and under 5% to the supervisor's
own event handling.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from benchmarks.common import machine
from specialists.base.clock import FakeClock
from specialists.features.attention.companion import Attendant
from specialists.features.attention.settings import AttentionSettings
from specialists.features.attention.watch import AttentionWatch, mutating_tools
from specialists.runners.base import Activity, RunnerEvent, toolcall
from specialists.store.jobs import JobStore
from specialists.store.records import JobStatus

N = 100_000
EVENTS: list[RunnerEvent] = [
    Activity("thinking", log=False),
    toolcall("bash", {"command": "make test"}),
    Activity("tool_execution", {"tool": "bash"}, log=False, current_tool="bash"),
    Activity("tool_execution_end", {"tool": "bash", "is_error": False}),
    Activity("text"),
    Activity("turn_end", {"turn": 1}),
]


def per_call_ns(fn, n: int = N, rounds: int = 7) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.thread_time_ns()
        fn(n)
        times.append((time.thread_time_ns() - t0) / n)
    return min(times)  # CPU time, least disturbed round: the machine is shared


def core() -> None:
    clock = FakeClock()
    watch = AttentionWatch(AttentionSettings(), mutating_tools("pi"), clock())
    kinds = [
        ("thinking", None),
        ("toolcall", "bash"),
        ("tool_execution_end", "bash"),
        ("text", None),
    ]

    def saw(n: int) -> None:
        for i in range(n):
            event, tool = kinds[i & 3]
            watch.saw(1000.0 + i, event, tool)

    def due(n: int) -> None:
        for i in range(n):
            watch.due(1000.0 + i * 0.001, running=True)

    print(f"AttentionWatch.saw: {per_call_ns(saw):.0f} ns per event")
    print(f"AttentionWatch.due: {per_call_ns(due):.0f} ns per loop step")


def hook() -> None:
    from tests.support.jobs import make_record

    root = Path(tempfile.mkdtemp(prefix="sp-bench-attn-"))
    store = JobStore(root / ".specialists", news=None)
    clock = FakeClock()
    record = make_record(root, id="1a2b3c4d")
    status = JobStatus(id=record.id, specialist="tester")
    attendant = Attendant(
        store, record, status, clock=clock, wall=clock, event=lambda *a, **k: None
    )

    def saw(n: int) -> None:
        for i in range(n):
            attendant.saw(EVENTS[i % len(EVENTS)], 1000.0 + i * 0.01)

    def tick(n: int) -> None:
        for _ in range(n):
            attendant.tick(running=True)

    print(f"Attendant.saw (with status facts): {per_call_ns(saw):.0f} ns per event")
    print(f"Attendant.tick: {per_call_ns(tick):.0f} ns per loop step")


def share() -> None:
    """A real Supervisor's `on_runner_event` with the hook, and with it replaced by a no-op."""
    from specialists.runners.testing import ScriptedRunner
    from specialists.store.news import NEWS
    from specialists.supervise.supervisor import Supervisor
    from tests.support.jobs import new_job

    root = Path(tempfile.mkdtemp(prefix="sp-bench-attn-"))
    store = JobStore(root / ".specialists", news=NEWS)
    clock = FakeClock()
    rec, lock = new_job(store, root)
    sup = Supervisor(
        store,
        rec,
        ScriptedRunner(clock=clock),
        clock=clock,
        sleep=clock.sleep,
        wall=clock,
        handle_signals=False,
    )
    status_only = [e for e in EVENTS if not (isinstance(e, Activity) and e.log)]
    # The attention feature is one of the supervisor's companions (HOOKS.companions).
    attendant = next(c for c in sup.companions if isinstance(c, Attendant))
    real_saw = attendant.saw
    for label, events, n in (("status-only", status_only, 50_000), ("a pi mix", EVENTS, 5_000)):

        def handle(n: int, events: list[RunnerEvent] = events) -> None:
            for i in range(n):
                sup.on_runner_event(events[i % len(events)])

        with_hook = without = float("inf")
        for _ in range(7):  # interleaved, so both see the same load
            attendant.saw = real_saw  # type: ignore[method-assign]
            with_hook = min(with_hook, per_call_ns(handle, n, rounds=1))
            attendant.saw = lambda ev, now: False  # type: ignore[method-assign]
            without = min(without, per_call_ns(handle, n, rounds=1))
        extra = with_hook - without
        print(
            f"Supervisor event handling ({label} events): {with_hook:.0f} ns with attention, "
            f"{without:.0f} ns without: {extra:+.0f} ns ({100 * extra / without:+.1f}%)"
        )
    attendant.saw = real_saw  # type: ignore[method-assign]
    lock.release()


if __name__ == "__main__":
    print(machine())
    core()
    hook()
    share()
