"""Pumping a Runner in tests: poll until a condition holds, then pick events by type."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from specialists.runners.base import Activity, AgentExited, AgentRunner, RunFinished, RunnerEvent


def drive(
    runner: AgentRunner, until: Callable[[list[RunnerEvent]], bool], timeout: float = 60.0
) -> list[RunnerEvent]:
    """Poll `runner` until `until(events)` is true; fail the test after `timeout` seconds."""
    events: list[RunnerEvent] = []
    deadline = time.monotonic() + timeout
    while not until(events):
        assert time.monotonic() < deadline, f"timed out; got {events}"
        events += runner.poll(0.1)
    return events


def finished(events: list[RunnerEvent]) -> bool:
    return any(isinstance(e, RunFinished) for e in events)


def exited(events: list[RunnerEvent]) -> bool:
    return any(isinstance(e, AgentExited) for e in events)


def of(events: list[RunnerEvent], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def acts(events: list[RunnerEvent], name: str) -> list[Activity]:
    return [e for e in of(events, Activity) if e.event == name]
