"""One entry point over the schedules room for programs (the MCP tool `schedule`): an
action and plain arguments in, plain data out; refusals leave as UserError, as on the CLI."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specialists.base.errors import UserError
from specialists.features.schedules import ops
from specialists.features.schedules.model import SpecialistTarget, Target, WorkflowTarget
from specialists.features.schedules.store import Damaged, ScheduleStore
from specialists.features.schedules.triggers import parse_trigger

if TYPE_CHECKING:
    from specialists.features.schedules.fire import Firing
    from specialists.store.jobs import JobStore

ACTIONS = ("create", "list", "show", "history", "pause", "resume", "run", "delete", "run_due")


def schedule_action(jobs: JobStore, args: dict[str, Any]) -> dict[str, Any]:
    action = args.get("action")
    if action not in ACTIONS:
        raise UserError(f"unknown action {str(action)[:20]!r}", hint=", ".join(ACTIONS))
    store = ScheduleStore(jobs.root)
    now = int(time.time() * 1000)
    if action == "list":
        rows = [
            ops.summary(*item)
            if not isinstance(item, Damaged)
            else {"id": item.id, "damaged": item.problem}
            for item in store.all()
        ]
        return {"schedules": rows}
    if action == "run_due":
        from specialists.features.schedules.fire import run_due

        report = run_due(store, jobs, now)
        return {
            "firings": [firing_dict(f) for f in report.firings],
            "problems": list(report.problems),
        }
    if action == "create":
        return _create(jobs.root.parent, store, args, now)
    sid = args.get("id")
    if not isinstance(sid, str):
        raise UserError(f"{action} needs the schedule's id")
    if action == "show":
        data = ops.summary(*store.load(sid))
        data["history"] = store.history(sid, 10)
        return data
    if action == "history":
        store.load(sid)
        return {"id": sid, "history": store.history(sid, 50)}
    if action in ("pause", "resume"):
        outcome = ops.set_paused(store, sid, action == "pause", now)
        return {"id": sid, "paused": outcome.paused, "changed": outcome.changed}
    if action == "run":
        from specialists.features.schedules.fire import run_now

        return firing_dict(run_now(store, jobs, sid, now))
    store.delete(sid)
    return {"id": sid, "deleted": True}


def _create(root: Path, store: ScheduleStore, args: dict[str, Any], now: int) -> dict[str, Any]:
    from specialists.catalog import load_catalog

    specialist, workflow = args.get("specialist"), args.get("workflow")
    target: Target
    if specialist and workflow:
        raise UserError("a schedule has exactly one target", hint="specialist or workflow")
    if workflow:
        from specialists.features.workflows.consent import model_source

        model_source(root, str(workflow), via="schedule tool")  # refused now if bad
        target = WorkflowTarget("workflow", str(workflow), by_model=True)
    elif specialist:
        prompt = args.get("prompt")
        if not isinstance(prompt, str):
            raise UserError("a specialist target needs a prompt")
        load_catalog(root).get(str(specialist))
        timeout_s = args.get("timeout_s")
        target = SpecialistTarget(
            "specialist",
            str(specialist),
            prompt,
            args.get("model"),
            args.get("runner"),
            int(timeout_s * 1000) if timeout_s else None,
            args.get("cwd"),
        )
    else:
        raise UserError("a schedule needs a target", hint="specialist and prompt")
    trigger = parse_trigger(
        at=args.get("at"),
        every=args.get("every"),
        cron=args.get("cron"),
        zone=args.get("zone"),
        now_ms=now,
    )
    schedule = ops.create(
        store,
        trigger=trigger,
        target=target,
        now_ms=now,
        schedule_id=args.get("id"),
        name=str(args.get("name") or ""),
        catch_up=str(args.get("catch_up") or "latest"),
    )
    return {"id": schedule.id, "next_due_ms": schedule.trigger.next_after(now - 1)}


def firing_dict(firing: Firing) -> dict[str, Any]:
    return {
        "id": firing.schedule_id,
        "slot_ms": firing.slot_ms,
        "outcome": firing.outcome,
        "job_id": firing.job_id,
        "detail": firing.detail,
        "count": firing.count,
    }
