"""Firing schedules: what `schedule run-due`, `schedule run` and `specialists scheduler` do.

One firing, under the schedule's lock:
1. plan it (decide.py): which slot fires, which are missed;
2. claim the slot's lease (`fire-<slot>`, an exclusive create): a slot already claimed is
   never fired again, whoever claimed it and whether or not they finished;
3. apply `overlap: skip`: the last job it launched still active -> skipped, recorded;
4. launch through the `ScheduleLauncher` seam (the real one starts a background job owned
   by the schedule; the fake records calls);
5. write the slot's receipt, its history line, then the state.
A crash anywhere after 2 leaves the lease: the next run finds it, records the slot as
interrupted, and moves on. At most once per slot is the promise; a firing lost to a crash is
visible in the history, never repeated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from specialists.base.errors import NotFound, SpecialistsError
from specialists.features.schedules.decide import plan_firing
from specialists.features.schedules.model import Schedule, ScheduleState, owner_key
from specialists.features.schedules.store import ScheduleStore

Outcome = Literal["fired", "skipped", "missed", "failed", "interrupted"]  # model.OUTCOMES
_RECEIPTED: dict[str, Outcome] = {"fired": "fired", "skipped": "skipped", "failed": "failed"}


class ScheduleLauncher(Protocol):
    def launch(self, schedule: Schedule, slot_ms: int) -> str:
        """Start the schedule's target; the job id. Raises SpecialistsError when refused."""
        ...

    def is_active(self, job_id: str) -> bool: ...


@dataclass(frozen=True)
class Firing:
    schedule_id: str
    slot_ms: int
    outcome: Outcome
    job_id: str | None = None
    detail: str = ""
    count: int = 1  # missed: how many slots this line stands for


@dataclass(frozen=True)
class RunDueReport:
    checked: int
    firings: tuple[Firing, ...]
    problems: tuple[str, ...]
    next_due_ms: int | None = None  # the soonest slot still to come (paused ones' past slots aside)


AfterLease = Callable[[str, int], None]  # a test's hook between the lease and the launch


def run_due(
    store: ScheduleStore,
    launcher: ScheduleLauncher,
    now_ms: int,
    *,
    after_lease: AfterLease | None = None,
) -> RunDueReport:
    """Fire every schedule that is due at `now_ms`, once each; never raises for one bad one."""
    firings: list[Firing] = []
    problems: list[str] = []
    soonest: int | None = None
    ids = store.ids()
    for schedule_id in ids:
        try:
            due = store.due_ms(schedule_id)
            if due is not None and due <= now_ms:
                firings.extend(fire_due_one(store, launcher, schedule_id, now_ms, after_lease))
                due = store.due_ms(schedule_id)
        except (FileNotFoundError, NotFound):
            continue  # deleted meanwhile
        except (SpecialistsError, OSError) as exc:
            problems.append(f"schedule {schedule_id}: {_text(exc)}")
            continue
        if due is not None and due > now_ms and (soonest is None or due < soonest):
            soonest = due
    return RunDueReport(len(ids), tuple(firings), tuple(problems), soonest)


def fire_due_one(
    store: ScheduleStore,
    launcher: ScheduleLauncher,
    schedule_id: str,
    now_ms: int,
    after_lease: AfterLease | None = None,
) -> list[Firing]:
    with store.locked(schedule_id):
        schedule, state = store.load(schedule_id)  # again: another firing may have moved it
        plan = plan_firing(schedule, state, now_ms)
        if plan is None:
            return []
        out: list[Firing] = []
        if plan.missed and plan.missed_first is not None:
            detail = f"catch_up: {schedule.catch_up}"
            detail += "; more were due than counted" if plan.many else ""
            missed = Firing(schedule_id, plan.missed_first, "missed", None, detail, plan.missed)
            _log(store, missed, now_ms, last_ms=plan.missed_last)
            state = replace(state, missed=state.missed + plan.missed, last_outcome="missed")
            out.append(missed)
        if plan.slot is not None:
            firing, state = _fire_slot(
                store, launcher, schedule, state, plan.slot, now_ms, after_lease
            )
            out.append(firing)
        store.save_state(
            schedule_id, replace(state, last_slot_ms=plan.last_slot, next_due_ms=plan.next_due)
        )
    store.prune(schedule_id)
    return out


def run_now(
    store: ScheduleStore,
    launcher: ScheduleLauncher,
    schedule_id: str,
    now_ms: int,
) -> Firing:
    """Fire once now, outside the trigger (paused or not); its due slots are untouched."""
    with store.locked(schedule_id):
        schedule, state = store.load(schedule_id)
        slot = now_ms
        while store.lease_exists(schedule_id, slot):
            slot += 1  # two run-nows in one millisecond are two slots
        store.note(schedule_id, {"ts": now_ms, "event": "run-now", "slot_ms": slot})
        firing, state = _fire_slot(store, launcher, schedule, state, slot, now_ms, None)
        store.save_state(schedule_id, state)
    store.prune(schedule_id)
    return firing


def _fire_slot(
    store: ScheduleStore,
    launcher: ScheduleLauncher,
    schedule: Schedule,
    state: ScheduleState,
    slot: int,
    now_ms: int,
    after_lease: AfterLease | None,
) -> tuple[Firing, ScheduleState]:
    sid = schedule.id
    if not store.take_lease(sid, slot, now_ms=now_ms):
        receipt = store.receipt(sid, slot) or {}
        done = _RECEIPTED.get(str(receipt.get("outcome")))
        if done is not None:
            # Carried out and receipted; only the state was not saved: catch the state up.
            job = receipt.get("job_id") if isinstance(receipt.get("job_id"), str) else None
            firing = Firing(sid, slot, done, job, "receipt found; not fired again")
            return firing, replace(state, last_job=job or state.last_job, last_outcome=done)
        detail = (
            "its firing stopped midway and is not retried (a job may have started: look for"
            f" jobs owned by {owner_key(sid)})"
        )
        firing = Firing(sid, slot, "interrupted", None, detail)
        _log(store, firing, now_ms)
        return firing, replace(state, last_outcome="interrupted")
    if after_lease is not None:
        after_lease(sid, slot)
    busy, note = _still_active(launcher, state.last_job)
    if busy:
        firing = Firing(sid, slot, "skipped", None, f"overlap: job {state.last_job} still active")
        state = replace(state, skipped=state.skipped + 1)
    else:
        try:
            job = launcher.launch(schedule, slot)
        except (SpecialistsError, OSError) as exc:
            firing = Firing(sid, slot, "failed", None, _text(exc))
        else:
            firing = Firing(sid, slot, "fired", job, note)
            state = replace(state, last_job=job, fired=state.fired + 1)
    store.write_receipt(
        sid,
        slot,
        {
            "slot_ms": slot,
            "at_ms": now_ms,
            "outcome": firing.outcome,
            "job_id": firing.job_id,
            "detail": firing.detail,
        },
    )
    _log(store, firing, now_ms)
    return firing, replace(state, last_outcome=firing.outcome)


def _still_active(launcher: ScheduleLauncher, job_id: str | None) -> tuple[bool, str]:
    """Whether the last job still runs. One whose status cannot be read does not block the
    schedule forever: it counts as ended, and the firing says so."""
    if job_id is None:
        return False, ""
    try:
        return launcher.is_active(job_id), ""
    except (SpecialistsError, OSError) as exc:
        return False, f"the last job {job_id} could not be read ({_text(exc)}); not waited for"


def _log(store: ScheduleStore, firing: Firing, now_ms: int, *, last_ms: int | None = None) -> None:
    entry: dict[str, object] = {
        "ts": now_ms,
        "slot_ms": firing.slot_ms,
        "outcome": firing.outcome,
    }
    if firing.job_id:
        entry["job_id"] = firing.job_id
    if firing.detail:
        entry["detail"] = firing.detail
    if firing.outcome == "missed":
        entry["count"] = firing.count
        entry["last_slot_ms"] = last_ms
    store.record(firing.schedule_id, entry)


def _text(exc: BaseException) -> str:
    if isinstance(exc, SpecialistsError):
        return exc.one_line()
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    return str(exc) or type(exc).__name__
