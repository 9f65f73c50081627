"""What to fire now: the pure catch-up decision for one schedule at one instant.

Slots due since the last one handled are folded into one plan:
- `catch_up: latest`: the latest due slot fires, however late; the earlier ones are missed.
- `catch_up: none`: the latest due slot fires only if it is on time (found within
  ON_TIME_MS of its slot: `run-due` from a once-a-minute cron always is); otherwise every
  due slot is missed and the schedule waits for its next one.
A paused schedule plans nothing; resuming it starts from the resume time, so the slots of
the pause are neither fired nor counted as missed.
"""

from __future__ import annotations

from dataclasses import dataclass

from specialists.features.schedules.model import Schedule, ScheduleState
from specialists.features.schedules.triggers import Trigger

ON_TIME_MS = 120_000
MAX_SCAN = 1000  # slots counted one by one; past that, "more than" and a jump to the end
_WINDOWS_MS = (3_600_000, 86_400_000, 32 * 86_400_000, 367 * 86_400_000)


@dataclass(frozen=True)
class FiringPlan:
    slot: int | None  # the slot to fire now, if any
    missed: int  # due slots that will not fire
    missed_first: int | None
    missed_last: int | None
    many: bool  # more slots were due than were counted (missed is a lower bound)
    last_slot: int  # every slot up to here is handled once this plan is carried out
    next_due: int | None


def plan_firing(schedule: Schedule, state: ScheduleState, now_ms: int) -> FiringPlan | None:
    """The plan for `now_ms`, or None when nothing is due (or the schedule is paused)."""
    due = state.next_due_ms
    if schedule.paused or due is None or due > now_ms:
        return None
    slots, many = due_slots(schedule.trigger, due, now_ms)
    latest = slots[-1]
    fire = schedule.catch_up == "latest" or now_ms - latest <= ON_TIME_MS
    missed = slots[:-1] if fire else slots
    return FiringPlan(
        slot=latest if fire else None,
        missed=len(missed),
        missed_first=missed[0] if missed else None,
        missed_last=missed[-1] if missed else None,
        many=many,
        last_slot=latest,
        next_due=schedule.trigger.next_after(latest),
    )


def due_slots(trigger: Trigger, first_ms: int, now_ms: int) -> tuple[list[int], bool]:
    """The slots from `first_ms` (itself due) up to `now_ms`, the last one always included.

    Past MAX_SCAN slots (a minute schedule after a month off) the count stops and the scan
    jumps to the latest slot, found in the smallest window before `now_ms` that holds one.
    """
    slots = [first_ms]
    while len(slots) < MAX_SCAN:
        following = trigger.next_after(slots[-1])
        if following is None or following > now_ms:
            return slots, False
        slots.append(following)
    for window in _WINDOWS_MS:
        start = max(slots[-1], now_ms - window)
        candidate = trigger.next_after(start)
        if candidate is not None and candidate <= now_ms:
            tail = [candidate]
            while True:
                following = trigger.next_after(tail[-1])
                if following is None or following > now_ms:
                    return [*slots, *tail], True
                tail.append(following)
    return slots, True  # no slot in a year before now: the last counted one is the latest
