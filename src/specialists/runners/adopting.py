"""What the runners' `adopt_state` / `adopt` share (executors/job.py `Adoptable`).

A runner's state at a checkpoint is plain JSON: times on the monotonic clock travel as ages
(seconds before the checkpoint) and become times again on the successor's clock; events a
runner holds for its next `poll` travel as dicts. `check_runner` refuses a state another
runner wrote, with both names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from specialists.base.errors import AgentUnavailable
from specialists.runners.base import Activity, RunnerEvent


def check_runner(state: Mapping[str, Any], name: str) -> None:
    if state.get("runner") != name:
        raise AgentUnavailable(
            f"the checkpoint holds the state of the {state.get('runner')!r} runner, not of {name!r}"
        )


def held_events(events: Iterable[RunnerEvent]) -> list[dict[str, Any]] | None:
    """Events not yet handed out, as dicts; None when one is not an Activity (the runner
    is then not in a state to take over)."""
    out = []
    for ev in events:
        if not isinstance(ev, Activity):
            return None
        out.append(
            {"event": ev.event, "fields": dict(ev.fields), "log": ev.log, "tool": ev.current_tool}
        )
    return out


def events_held(raw: Iterable[Mapping[str, Any]]) -> list[RunnerEvent]:
    return [
        Activity(str(e["event"]), dict(e["fields"]), log=bool(e["log"]), current_tool=e["tool"])
        for e in raw
    ]


def ages(times: Mapping[str, float], now: float) -> dict[str, float]:
    return {key: round(now - at, 3) for key, at in times.items()}


def times(raw: Mapping[str, Any], now: float) -> dict[str, float]:
    return {str(key): now - float(age) for key, age in raw.items()}
