"""`specialists schedule ...`: durable schedules of specialist runs (docs/schedules.md).

schedule create [ID] (--at T | --every N | --cron EXPR --zone Z) --specialist NAME
                --prompt TEXT [--model M] [--runner R] [--timeout D] [--cwd DIR]
                [--catch-up latest|none] [--name TEXT] [--json]
schedule list | show ID | history ID | pause ID | resume ID | run ID | delete ID
schedule run-due            fire what is due once and exit (for cron or a systemd timer)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, Any

from specialists.fronts.cli.values import DURATION_HELP, Duration, nonempty

if TYPE_CHECKING:
    from specialists.features.schedules.fire import Firing
    from specialists.features.schedules.store import ScheduleStore
    from specialists.project import Project


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("schedule", help="schedules of specialist runs (at, every, cron)")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)

    c = verbs.add_parser("create", help="create a schedule")
    c.add_argument("id", nargs="?", help="schedule id (default: a fresh sc-xxxxxxxx)")
    c.add_argument("--at", help="once: +30m, +2h, or an ISO time with a zone")
    c.add_argument("--every", help="a fixed interval: 15m, 6h, 1d, 2w")
    c.add_argument("--cron", help="five cron fields, e.g. '30 2 * * 1-5' (needs --zone)")
    c.add_argument("--zone", type=nonempty, help="IANA zone for --cron / --at, e.g. Europe/Berlin")
    c.add_argument("--specialist", type=nonempty, help="the specialist to run")
    c.add_argument(
        "--workflow", type=nonempty, help="a workflow to start, by name (specialists workflow list)"
    )
    c.add_argument("--prompt", "-p", help="the task for the specialist")
    c.add_argument("--model", type=nonempty, help="override the model")
    c.add_argument("--runner", type=nonempty, help="override the runner")
    c.add_argument("--timeout", type=Duration, help=f"job time limit ({DURATION_HELP})")
    c.add_argument("--cwd", type=nonempty, help="working directory (default: the project root)")
    c.add_argument("--catch-up", default="latest", choices=("latest", "none"))
    c.add_argument("--overlap", default="skip", choices=("skip",))
    c.add_argument("--name", default="", help="a label for people")
    c.add_argument("--json", action="store_true")
    c.set_defaults(run=_create)

    for verb, helptext, handler in (
        ("show", "one schedule: definition, state, recent history", _show),
        ("history", "what each slot did: fired, skipped, missed, failed", _history),
        ("pause", "stop firing (reversible)", _pause),
        ("resume", "fire again, from now on", _resume),
        ("run", "fire once now (overlap still applies)", _run_now),
        ("delete", "remove the schedule (its jobs stay)", _delete),
    ):
        v = verbs.add_parser(verb, help=helptext)
        v.add_argument("id")
        v.add_argument("--json", action="store_true")
        if verb == "history":
            v.add_argument("--limit", type=int, default=50)
        if verb == "show":
            v.add_argument("--next", type=int, default=3, metavar="N", help="upcoming slots")
        v.set_defaults(run=handler)
    ls = verbs.add_parser("list", help="every schedule with its next slot")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(run=_list)
    due = verbs.add_parser("run-due", help="fire what is due now, once, and exit")
    due.add_argument("--json", action="store_true")
    due.set_defaults(run=_run_due)


def _store(project: Project) -> ScheduleStore:
    from specialists.features.schedules.store import ScheduleStore

    return ScheduleStore(project.store.root)


def _now_ms() -> int:
    return int(time.time() * 1000)


def _when(ms: int | None) -> str:
    if ms is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(ms / 1000))


def _emit(data: Any) -> None:
    print(json.dumps(data, ensure_ascii=False, indent=1))


def _create(args: argparse.Namespace, project: Project) -> int:
    from specialists.base.errors import UserError
    from specialists.features.schedules import ops
    from specialists.features.schedules.model import SpecialistTarget, Target, WorkflowTarget
    from specialists.features.schedules.triggers import describe, parse_trigger

    now = _now_ms()
    if args.workflow and args.specialist:
        raise UserError("a schedule has exactly one target", hint="--specialist or --workflow")
    target: Target
    if args.workflow:
        from specialists.features.workflows.launch import check_source
        from specialists.features.workflows.source import find_workflow

        check_source(find_workflow(project.root, args.workflow, cwd=project.root))
        target = WorkflowTarget("workflow", args.workflow)
    elif args.specialist:
        if args.prompt is None:
            raise UserError("no prompt given", hint="pass --prompt TEXT")
        timeout = args.timeout.ms if args.timeout else None
        target = SpecialistTarget(
            "specialist", args.specialist, args.prompt, args.model, args.runner, timeout, args.cwd
        )
        _check_specialist(project, args.specialist)
    else:
        raise UserError("a schedule needs a target", hint="--specialist NAME --prompt TEXT")
    trigger = parse_trigger(
        at=args.at, every=args.every, cron=args.cron, zone=args.zone, now_ms=now
    )
    schedule = ops.create(
        _store(project),
        trigger=trigger,
        target=target,
        now_ms=now,
        schedule_id=args.id,
        name=args.name,
        catch_up=args.catch_up,
        overlap=args.overlap,
    )
    first = schedule.trigger.next_after(now - 1)
    if args.json:
        _emit({"id": schedule.id, "next_due_ms": first})
    else:
        print(f"{schedule.id}  {describe(schedule.trigger)}  next {_when(first)}")
    return 0


def _check_specialist(project: Project, name: str) -> None:
    """An unknown specialist is refused at create, not at the first firing."""
    from specialists.catalog import load_catalog

    load_catalog(project.root).get(name)


def _list(args: argparse.Namespace, project: Project) -> int:
    from specialists.base.display import display_line
    from specialists.features.schedules.ops import summary
    from specialists.features.schedules.store import Damaged

    rows, damaged = [], []
    for item in _store(project).all():
        if isinstance(item, Damaged):
            damaged.append(item)
        else:
            rows.append(summary(*item))
    for bad in damaged:
        print(f"warning: schedule {bad.id}: {display_line(bad.problem, 300)}", file=sys.stderr)
    if args.json:
        _emit({"schedules": rows, "damaged": [{"id": d.id, "problem": d.problem} for d in damaged]})
        return 0
    if not rows:
        print("no schedules (create one: specialists schedule create --help)")
    for row in rows:
        target = row["target"].get("specialist") or row["target"].get("workflow")
        print(
            f"{row['id']:<20} {row['status']:<8} {display_line(row['when'], 40):<40}"
            f" next {_when(row['state']['next_due_ms'])}  -> {target}"
        )
    return 0


def _show(args: argparse.Namespace, project: Project) -> int:
    from specialists.base.display import display_line
    from specialists.features.schedules.ops import summary

    store = _store(project)
    schedule, state = store.load(args.id)
    data = summary(schedule, state)
    data["history"] = store.history(args.id, 10)
    data["upcoming_ms"] = _upcoming(schedule, state, max(0, min(args.next, 50)))
    if args.json:
        _emit(data)
        return 0
    state = data["state"]
    print(
        f"id:        {data['id']}"
        + (f"  ({display_line(data['name'], 80)})" if data["name"] else "")
    )
    print(f"status:    {data['status']}")
    print(f"trigger:   {display_line(data['when'], 200)}")
    print(f"target:    {display_line(json.dumps(data['target'], ensure_ascii=False), 300)}")
    print(f"policy:    overlap {data['overlap']}, catch_up {data['catch_up']}")
    zone = data["trigger"].get("zone")
    for n, slot in enumerate(data["upcoming_ms"]):
        label = "next:" if n == 0 else ""
        print(f"{label:<10} {_when(slot)}" + (f"  ({_zoned(slot, zone)})" if zone else ""))
    if not data["upcoming_ms"]:
        print(f"next:      {_when(state['next_due_ms'])}")
    print(
        f"counts:    fired {state['fired']}, skipped {state['skipped']}, missed {state['missed']}"
        f"; last job {state['last_job'] or '-'}"
    )
    for entry in data["history"]:
        print("  " + _history_line(entry))
    return 0


def _upcoming(schedule: Any, state: Any, count: int) -> list[int]:
    """The next `count` slots from the state's next due one (none while paused)."""
    slots: list[int] = []
    at = None if schedule.paused else state.next_due_ms
    while at is not None and len(slots) < count:
        slots.append(at)
        at = schedule.trigger.next_after(at)
    return slots


def _zoned(ms: int, zone: str) -> str:
    from datetime import datetime

    from specialists.events.zone import load_zone

    return datetime.fromtimestamp(ms / 1000, load_zone(zone)).strftime(f"%Y-%m-%d %H:%M %z {zone}")


def _history_line(entry: dict[str, Any]) -> str:
    from specialists.base.display import display_line

    slot = entry.get("slot_ms")
    text = f"{_when(slot if isinstance(slot, int) else None)}  {entry.get('outcome', '?')}"
    if entry.get("job_id"):
        text += f"  job {entry['job_id']}"
    if entry.get("count", 1) != 1:
        text += f"  x{entry['count']}"
    if entry.get("detail"):
        text += f"  ({entry['detail']})"
    return display_line(text, 400)


def _history(args: argparse.Namespace, project: Project) -> int:
    store = _store(project)
    store.load(args.id)  # an unknown or damaged id is one error line
    entries = store.history(args.id, max(1, args.limit))
    if args.json:
        _emit({"id": args.id, "history": entries})
        return 0
    if not entries:
        print(f"{args.id}: nothing fired yet")
    for entry in entries:
        print(_history_line(entry))
    return 0


def _pause(args: argparse.Namespace, project: Project) -> int:
    return _set_paused(args, project, True)


def _resume(args: argparse.Namespace, project: Project) -> int:
    return _set_paused(args, project, False)


def _set_paused(args: argparse.Namespace, project: Project, paused: bool) -> int:
    from specialists.features.schedules.ops import set_paused

    outcome = set_paused(_store(project), args.id, paused, _now_ms())
    word = "paused" if paused else "resumed"
    if args.json:
        _emit({"id": outcome.id, "paused": outcome.paused, "changed": outcome.changed})
    elif outcome.changed:
        tail = "" if paused else f"; next {_when(outcome.next_due_ms)}"
        print(f"{outcome.id} {word}{tail}")
    else:
        print(f"{outcome.id} was {word} already")
    return 0


def _run_now(args: argparse.Namespace, project: Project) -> int:
    from specialists.features.schedules.fire import run_now

    warnings: list[str] = []
    firing = run_now(_store(project), project.store, args.id, _now_ms(), warnings)
    _warn(warnings)
    _print_firings([firing], args.json)
    return 0 if firing.outcome in ("fired", "skipped") else 1


def _delete(args: argparse.Namespace, project: Project) -> int:
    _store(project).delete(args.id)
    if args.json:
        _emit({"id": args.id, "deleted": True})
    else:
        print(f"{args.id} deleted")
    return 0


def _run_due(args: argparse.Namespace, project: Project) -> int:
    from specialists.base.display import display_line
    from specialists.features.schedules.fire import run_due

    warnings: list[str] = []
    report = run_due(_store(project), project.store, _now_ms(), warnings)
    _warn(warnings)
    for problem in report.problems:
        print(f"warning: {display_line(problem, 400)}", file=sys.stderr)
    if args.json:
        _emit(
            {
                "checked": report.checked,
                "firings": [_firing_dict(f) for f in report.firings],
                "problems": list(report.problems),
            }
        )
    else:
        _print_firings(list(report.firings), False)
    failed = any(f.outcome == "failed" for f in report.firings) or report.problems
    return 1 if failed else 0


def _firing_dict(firing: Firing) -> dict[str, Any]:
    return {
        "id": firing.schedule_id,
        "slot_ms": firing.slot_ms,
        "outcome": firing.outcome,
        "job_id": firing.job_id,
        "detail": firing.detail,
        "count": firing.count,
    }


def _print_firings(firings: list[Firing], as_json: bool) -> None:
    from specialists.base.display import display_line

    if as_json:
        for firing in firings:
            _emit(_firing_dict(firing))
        return
    for f in firings:
        text = f"{f.schedule_id}  {_when(f.slot_ms)}  {f.outcome}"
        text += f"  job {f.job_id}" if f.job_id else ""
        text += f"  x{f.count}" if f.count != 1 else ""
        text += f"  ({f.detail})" if f.detail else ""
        print(display_line(text, 400))


def _warn(warnings: list[str]) -> None:
    from specialists.base.display import display_line

    for warning in warnings:
        print(f"warning: {display_line(warning, 400)}", file=sys.stderr)
