"""Firing schedules: what `schedule run-due`, `schedule run` and `specialists scheduler` do.

One firing, under the schedule's lock:
1. plan it (decide.py): which slot fires, which are missed;
2. a slot with a receipt was carried out already (only the state was lost): caught up;
3. apply `overlap: skip`: the last job it launched still active -> skipped, recorded;
4. start the target (launch.py) through the one start, keyed `schedule:<id>:<slot ms>`: a
   slot whose key was claimed before answers with the job it started, so a firing repeated
   after a crash, or by a second scheduler, finds that job instead of starting another
   (and one that never got its supervisor gets it then: supervise/start.py);
5. write the slot's receipt, its history line, then the state.
Exactly one job per slot, however often a crash repeats the firing. A `fire-<slot>` lease
left by a release before 0.2 still means the slot was claimed: recorded as interrupted if no
receipt says how it ended, never fired again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from specialists.base.errors import NotFound, SpecialistsError
from specialists.features.schedules.decide import plan_firing
from specialists.features.schedules.launch import schedule_record
from specialists.features.schedules.model import Schedule, ScheduleState, owner_key
from specialists.features.schedules.store import ScheduleStore
from specialists.store import keys
from specialists.store.jobs import JobStore
from specialists.store.view import still_active
from specialists.supervise.start import start

Outcome = Literal["fired", "skipped", "missed", "failed", "interrupted"]  # model.OUTCOMES
_RECEIPTED: dict[str, Outcome] = {"fired": "fired", "skipped": "skipped", "failed": "failed"}


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


def slot_key(schedule_id: str, slot_ms: int) -> str:
    return f"schedule:{schedule_id}:{slot_ms}"


def run_due(
    store: ScheduleStore, jobs: JobStore, now_ms: int, warnings: list[str] | None = None
) -> RunDueReport:
    """Fire every schedule that is due at `now_ms`, once each; never raises for one bad one.
    Problems that do not stop a firing go to `warnings`."""
    firings: list[Firing] = []
    problems: list[str] = []
    soonest: int | None = None
    ids = store.ids()
    for schedule_id in ids:
        try:
            due = store.due_ms(schedule_id)
            if due is not None and due <= now_ms:
                firings.extend(fire_due_one(store, jobs, schedule_id, now_ms, warnings))
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
    jobs: JobStore,
    schedule_id: str,
    now_ms: int,
    warnings: list[str] | None = None,
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
            state = state.replace(missed=state.missed + plan.missed, last_outcome="missed")
            out.append(missed)
        if plan.slot is not None:
            firing, state = _fire_slot(store, jobs, schedule, state, plan.slot, now_ms, warnings)
            out.append(firing)
        store.save_state(
            schedule_id, state.replace(last_slot_ms=plan.last_slot, next_due_ms=plan.next_due)
        )
    store.prune(schedule_id)
    return out


def run_now(
    store: ScheduleStore,
    jobs: JobStore,
    schedule_id: str,
    now_ms: int,
    warnings: list[str] | None = None,
) -> Firing:
    """Fire once now, outside the trigger (paused or not); its due slots are untouched."""
    with store.locked(schedule_id):
        schedule, state = store.load(schedule_id)
        slot = now_ms
        while (
            store.receipt(schedule_id, slot) is not None
            or store.lease_exists(schedule_id, slot)
            or keys.holder(jobs.root, slot_key(schedule_id, slot)) is not None
        ):
            slot += 1  # two run-nows in one millisecond are two slots
        store.note(schedule_id, {"ts": now_ms, "event": "run-now", "slot_ms": slot})
        firing, state = _fire_slot(store, jobs, schedule, state, slot, now_ms, warnings)
        store.save_state(schedule_id, state)
    store.prune(schedule_id)
    return firing


def _fire_slot(
    store: ScheduleStore,
    jobs: JobStore,
    schedule: Schedule,
    state: ScheduleState,
    slot: int,
    now_ms: int,
    warnings: list[str] | None,
) -> tuple[Firing, ScheduleState]:
    sid = schedule.id
    receipt = store.receipt(sid, slot) or {}
    done = _RECEIPTED.get(str(receipt.get("outcome")))
    if done is not None:
        # Carried out and receipted; only the state was not saved: catch the state up.
        job = receipt.get("job_id") if isinstance(receipt.get("job_id"), str) else None
        firing = Firing(sid, slot, done, job, "receipt found; not fired again")
        return firing, state.replace(last_job=job or state.last_job, last_outcome=done)
    if store.lease_exists(sid, slot):  # claimed by a release before 0.2, never receipted
        detail = (
            "its firing stopped midway and is not retried (a job may have started: look for"
            f" jobs owned by {owner_key(sid)})"
        )
        firing = Firing(sid, slot, "interrupted", None, detail)
        _log(store, firing, now_ms)
        return firing, state.replace(last_outcome="interrupted")
    key = slot_key(sid, slot)
    # A slot started before (the firing was cut short after its start) is that job, busy or not.
    started_before = keys.holder(jobs.root, key) is not None
    busy, note = (False, "") if started_before else _still_active(jobs, state.last_job)
    if busy:
        firing = Firing(sid, slot, "skipped", None, f"overlap: job {state.last_job} still active")
        state = state.replace(skipped=state.skipped + 1)
    else:
        try:
            plan = lambda: schedule_record(jobs, schedule, warnings)  # noqa: E731
            begun = start(jobs, plan, key=key, housekeep=True, warnings=warnings)
        except (SpecialistsError, OSError) as exc:
            firing = Firing(sid, slot, "failed", None, _text(exc))
        else:
            if begun.existed:
                note = "started before this firing was cut short; not started again"
            firing = Firing(sid, slot, "fired", begun.id, note)
            state = state.replace(last_job=begun.id, fired=state.fired + 1)
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
    return firing, state.replace(last_outcome=firing.outcome)


def _still_active(jobs: JobStore, job_id: str | None) -> tuple[bool, str]:
    """Whether the last job still runs. One whose status cannot be read does not block the
    schedule forever: it counts as ended, and the firing says so."""
    if job_id is None:
        return False, ""
    try:
        return still_active(jobs, job_id), ""
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
