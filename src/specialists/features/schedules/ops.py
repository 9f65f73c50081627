"""What people do to schedules (create, pause, resume, delete, show), as functions over
the store that return plain data; the ops (verbs.py) call these.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from specialists.base.errors import UserError
from specialists.features.schedules.model import (
    CATCH_UPS,
    CatchUp,
    Schedule,
    ScheduleState,
    Target,
    check_id,
    check_target,
)
from specialists.features.schedules.store import ScheduleStore
from specialists.features.schedules.triggers import Trigger, describe


def fresh_id(store: ScheduleStore) -> str:
    while True:
        candidate = "sc-" + os.urandom(4).hex()
        if candidate not in store.ids():
            return candidate


def create(
    store: ScheduleStore,
    *,
    trigger: Trigger,
    target: Target,
    now_ms: int,
    schedule_id: str | None = None,
    name: str = "",
    catch_up: str = "latest",
    overlap: str = "skip",
) -> Schedule:
    """Check everything, then write the schedule whole; nothing is written on a refusal."""
    check_target(target)
    if catch_up not in CATCH_UPS:
        raise UserError(f"unknown catch_up {catch_up[:20]!r}", hint="latest or none")
    if overlap != "skip":
        raise UserError(f"unknown overlap {overlap[:20]!r}", hint="only skip is supported")
    if len(name) > 200 or not name.isprintable():
        raise UserError("the name must be one printable line of at most 200 characters")
    first = trigger.next_after(now_ms - 1)
    if first is None:
        raise UserError(f"{describe(trigger)} is in the past", hint="give a time to come")
    chosen: CatchUp = "latest" if catch_up == "latest" else "none"
    schedule = Schedule(
        id=check_id(schedule_id) if schedule_id is not None else fresh_id(store),
        trigger=trigger,
        target=target,
        created_ms=now_ms,
        name=name,
        catch_up=chosen,
    )
    store.create(schedule, ScheduleState(last_slot_ms=now_ms - 1, next_due_ms=first), now_ms=now_ms)
    return schedule


@dataclass(frozen=True)
class PauseOutcome:
    id: str
    paused: bool
    changed: bool
    next_due_ms: int | None


def set_paused(store: ScheduleStore, schedule_id: str, paused: bool, now_ms: int) -> PauseOutcome:
    """Pause or resume. Resuming starts from now: slots of the pause are not caught up."""
    with store.locked(schedule_id):
        schedule, state = store.load(schedule_id)
        if schedule.paused == paused:
            return PauseOutcome(schedule.id, paused, False, state.next_due_ms)
        if not paused:
            due = schedule.trigger.next_after(now_ms - 1)
            state = state.replace(last_slot_ms=now_ms - 1, next_due_ms=due)
            store.save_state(schedule_id, state)
        store.save_definition(schedule.with_paused(paused))
        store.note(schedule_id, {"ts": now_ms, "event": "paused" if paused else "resumed"})
        return PauseOutcome(schedule.id, paused, True, state.next_due_ms)


def status_word(schedule: Schedule, state: ScheduleState) -> str:
    """paused, active, or (it never fires again) finished; but a schedule whose last slot
    was cut short, failed to launch or was missed says that instead of `finished`."""
    if schedule.paused:
        return "paused"
    if state.next_due_ms is not None:
        return "active"
    if state.last_outcome in ("interrupted", "failed", "missed"):
        return state.last_outcome
    return "finished"


def summary(schedule: Schedule, state: ScheduleState) -> dict[str, Any]:
    """One schedule as plain data (a row of `list`, the head of `show`)."""
    from specialists.features.schedules.model import schedule_to_dict

    data = schedule_to_dict(schedule)
    data.pop("schema", None)
    data["status"] = status_word(schedule, state)
    data["when"] = describe(schedule.trigger)
    data["state"] = {k: v for k, v in state.to_dict().items() if k != "schema"}
    return data
