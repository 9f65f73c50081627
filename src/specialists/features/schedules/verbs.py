"""The schedule ops (base/ops.py): `specialists schedule ...` and the MCP tool `schedule` are
generated from these. Each returns plain data; refusals are UserError, and nothing is
written on a refusal (the cores: ops.py, fire.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from specialists.base.errors import UserError
from specialists.base.ops import Noun, Op
from specialists.base.opschema import Cli, Range, Seconds, Text
from specialists.features.schedules.model import (
    MAX_PROMPT,
    SpecialistTarget,
    Target,
    WorkflowTarget,
)
from specialists.features.schedules.ops import create as add
from specialists.features.schedules.ops import set_paused, summary
from specialists.features.schedules.store import Damaged, ScheduleStore
from specialists.features.schedules.triggers import describe, parse_trigger

if TYPE_CHECKING:
    from specialists.features.schedules.fire import Firing
    from specialists.native.agent_tools import Caller

Id = Annotated[str, Text(48, 1)]
Line = Annotated[str, Text(256)]


# --- the ops --------------------------------------------------------------------------------


def _store(caller: Caller) -> ScheduleStore:
    return ScheduleStore(caller.state_root)


def _now(caller: Caller) -> int:
    return int(caller.clock() * 1000)


def create(
    caller: Caller,
    id: Id | None = None,
    /,
    *,
    at: Line | None = None,
    every: Line | None = None,
    cron: Line | None = None,
    zone: Annotated[str | None, Text(64, 1)] = None,
    specialist: Annotated[str | None, Text(64, 1)] = None,
    workflow: Line | None = None,
    prompt: Annotated[str | None, Text(MAX_PROMPT, line=False), Cli("--prompt", "-p")] = None,
    model: Line | None = None,
    runner: Line | None = None,
    timeout_s: Annotated[float | None, Range(1, 2_592_000), Seconds(), Cli("--timeout")] = None,
    cwd: Annotated[str | None, Text(4096, 1)] = None,
    catch_up: Literal["latest", "none"] = "latest",
    overlap: Literal["skip"] = "skip",
    name: Line = "",
) -> dict[str, Any]:
    """Create a schedule.

    Args:
        id: schedule id (default: a fresh sc-xxxxxxxx)
        at: once: +30m, +2h, or an ISO time with a zone
        every: a fixed interval: 15m, 6h, 1d, 2w
        cron: five cron fields, e.g. '30 2 * * 1-5' (needs zone)
        zone: IANA time zone for cron / at, e.g. Europe/Berlin
        specialist: the specialist to run
        workflow: a workflow to start, by name (specialists workflow list)
        prompt: the task for the specialist
        model: override the model
        runner: override the runner
        timeout_s: the job's time limit
        cwd: working directory (default: the project root)
        name: a label for people
    """
    now = _now(caller)
    target: Target
    if workflow and specialist:
        raise UserError("a schedule has exactly one target", hint="specialist or workflow")
    if workflow:
        target = _workflow_target(caller, workflow)
    elif specialist:
        if prompt is None:
            raise UserError("no prompt given", hint="pass --prompt TEXT")
        from specialists.catalog import load_catalog

        load_catalog(caller.root).get(specialist)  # refused at create, not at the firing
        timeout_ms = int(timeout_s * 1000) if timeout_s else None
        target = SpecialistTarget("specialist", specialist, prompt, model, runner, timeout_ms, cwd)
    else:
        raise UserError("a schedule needs a target", hint="--specialist NAME --prompt TEXT")
    trigger = parse_trigger(at=at, every=every, cron=cron, zone=zone, now_ms=now)
    schedule = add(
        _store(caller), trigger=trigger, target=target, now_ms=now, schedule_id=id, name=name,
        catch_up=catch_up, overlap=overlap,
    )  # fmt: skip
    first = schedule.trigger.next_after(now - 1)
    return {"id": schedule.id, "next_due_ms": first, "when": describe(schedule.trigger)}


def _workflow_target(caller: Caller, name: str) -> WorkflowTarget:
    """A person may schedule any workflow they could run; a model only a declarative file of
    the project whose gates the project allows (checked again at every firing)."""
    if caller.person:
        from specialists.features.workflows.launch import check_source
        from specialists.features.workflows.source import find_workflow

        check_source(find_workflow(caller.root, name, cwd=caller.root))
        return WorkflowTarget("workflow", name)
    from specialists.features.workflows.consent import model_source

    model_source(caller.root, name, via="schedule tool")
    return WorkflowTarget("workflow", name, by_model=True)


def listing(caller: Caller) -> dict[str, Any]:
    """Every schedule with its next slot."""
    rows, damaged = [], []
    for item in _store(caller).all():
        if isinstance(item, Damaged):
            damaged.append({"id": item.id, "problem": item.problem})
            caller.warnings.append(f"schedule {item.id}: {item.problem}")
        else:
            rows.append(summary(*item))
    return {"schedules": rows, "damaged": damaged}


def show(
    caller: Caller,
    id: Id,
    /,
    *,
    upcoming: Annotated[int, Range(0, 50), Cli("--next", metavar="N")] = 3,
) -> dict[str, Any]:
    """One schedule: definition, state, recent history.

    Args:
        upcoming: how many of the next slots to list
    """
    store = _store(caller)
    schedule, state = store.load(id)
    data = summary(schedule, state)
    data["history"] = store.history(id, 10)
    slots: list[int] = []
    at = None if schedule.paused else state.next_due_ms
    while at is not None and len(slots) < upcoming:
        slots.append(at)
        at = schedule.trigger.next_after(at)
    data["upcoming_ms"] = slots
    return data


def history(caller: Caller, id: Id, /, *, limit: int = 50) -> dict[str, Any]:
    """What each slot did: fired, skipped, missed, failed.

    Args:
        limit: the most recent entries to return
    """
    store = _store(caller)
    store.load(id)  # an unknown or damaged id is one error line
    return {"id": id, "history": store.history(id, max(1, limit))}


def pause(caller: Caller, id: Id, /) -> dict[str, Any]:
    """Stop firing (reversible)."""
    return _paused(caller, id, True)


def resume(caller: Caller, id: Id, /) -> dict[str, Any]:
    """Fire again, from now on."""
    return _paused(caller, id, False)


def _paused(caller: Caller, id: str, paused: bool) -> dict[str, Any]:
    outcome = set_paused(_store(caller), id, paused, _now(caller))
    return {
        "id": outcome.id, "paused": outcome.paused, "changed": outcome.changed,
        "next_due_ms": outcome.next_due_ms,
    }  # fmt: skip


def run(caller: Caller, id: Id, /) -> dict[str, Any]:
    """Fire once now (overlap still applies)."""
    from specialists.features.schedules.fire import run_now

    firing = run_now(_store(caller), caller.jobs(), id, _now(caller), caller.warnings)
    return firing_dict(firing)


def delete(caller: Caller, id: Id, /) -> dict[str, Any]:
    """Remove the schedule (its jobs stay)."""
    _store(caller).delete(id)
    return {"id": id, "deleted": True}


def run_due(caller: Caller) -> dict[str, Any]:
    """Fire what is due now, once, and exit."""
    from specialists.features.schedules.fire import run_due as fire_due

    report = fire_due(_store(caller), caller.jobs(), _now(caller), caller.warnings)
    caller.warnings.extend(report.problems)
    return {
        "checked": report.checked,
        "firings": [firing_dict(f) for f in report.firings],
        "problems": list(report.problems),
    }


def firing_dict(firing: Firing) -> dict[str, Any]:
    return {
        "id": firing.schedule_id,
        "slot_ms": firing.slot_ms,
        "outcome": firing.outcome,
        "job_id": firing.job_id,
        "detail": firing.detail,
        "count": firing.count,
    }


SCHEDULE = Noun(
    "schedule",
    "schedules of specialist runs (at, every, cron)",
    (
        Op(create, "create"),
        Op(listing, "list", reads=True),
        Op(show, "show", reads=True),
        Op(history, "history", reads=True),
        Op(pause, "pause"),
        Op(resume, "resume"),
        Op(run, "run"),
        Op(delete, "delete"),
        Op(run_due, "run-due"),
    ),
    tool="schedule",
    about=(
        "Durable schedules of specialist runs, fired even when no session is open (by "
        "`specialists schedule run-due` from cron/systemd, or `specialists scheduler`). "
        "action create: exactly one trigger (at: '+30m' or an ISO time with offset; every: "
        "'6h'; cron: 5 fields with zone, an IANA name) and one target (specialist + prompt, or "
        "workflow: a declarative one; Python workflows are refused); catch_up latest|none; "
        "overlap is skip. Also list, show, history, pause, resume, run "
        "(once now), delete, run_due. Jobs a schedule starts are owned by the schedule. Only "
        "schedule work the user asked for. Do not poll in a loop."
    ),
)
