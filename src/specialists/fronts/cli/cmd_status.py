"""`specialists status [--job ID] [--json]`: a health line, active jobs first, finished ones
summarised."""

from __future__ import annotations

import json
import sys

from specialists.base.display import duration
from specialists.base.errors import UserError
from specialists.events.lines import clip, status_line
from specialists.fronts.cli.commands import Plain

TYPE_CHECKING = False  # no `typing`, no `argparse` at run time: a person waits on `status`
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from specialists.project import Project

RECENT_FINISHED = 5
PLAIN = Plain(
    {"--json": "json", "--all": "all", "-a": "all"},
    "job_id",
    {"job": None, "job_id": None, "json": False, "all": False},
    options={"--job": "job", "-j": "job"},
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("status", help="show health and jobs (or one job with --job)")
    p.add_argument("--job", "-j", help="one job, by id or unique prefix")
    p.add_argument("job_id", nargs="?", metavar="JOB", help="the same as --job JOB")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--all", "-a", action="store_true", help="list every finished job too")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, project: Project) -> int:
    from specialists.fronts.cli.health import health, health_line
    from specialists.fronts.jobs import person, status
    from specialists.store.view import outcome_counts

    if args.job is not None and args.job_id is not None and args.job != args.job_id:
        raise UserError("two different jobs given", hint="give one job, as JOB or --job JOB")
    seen: Any = status(person(project), args.job if args.job is not None else args.job_id)
    if seen.job is not None:
        print(json.dumps(_json(seen.job)) if args.json else _detail(seen.job))
        return 0
    active, finished = seen.active, seen.finished
    for problem in seen.problems:
        print(f"warning: {clip(problem, 300)}", file=sys.stderr)
    shown = finished if args.all else finished[:RECENT_FINISHED]
    counts = outcome_counts(finished)
    facts = health(project.root_dir)
    if args.json:
        payload: dict[str, Any] = {
            "health": facts,
            "active": [_json(s) for s in active],
            "finished": [entry._asdict() for entry in shown],
            "counts": counts,
        }
        print(json.dumps(payload))
        return 0
    print(health_line(facts))
    if not active and not finished:
        print("no jobs")
        return 0
    print("── Active Jobs " + "─" * 40)
    for st in active:
        print(status_line(st))
    if not active:
        print("  none")
    if finished:
        summary = ", ".join(f"{n} {k}" for k, n in counts.items())
        print(f"── Finished ({summary}) " + "─" * 20)
        for entry in shown:
            print(_finished_line(entry))
        if len(finished) > len(shown):
            print(f"  … {len(finished) - len(shown)} older (status --all)")
    return 0


def _json(st: Any) -> dict[str, Any]:
    """A job's status as JSON, with what it and its children spent (jobs/rollup.py)."""
    from specialists.store.rollup import rollup

    return {**st.to_dict(), "rollup": rollup(st)}


def _finished_line(entry: Any) -> str:
    mark = {"done": "✓", "cancelled": "cancelled"}.get(entry.status, f"✗ {entry.error or ''}")
    if entry.title and not entry.workflow_key:
        mark = f"{clip(entry.title, 40)} · {mark}"
    return (
        f"  {entry.id}  {clip(entry.workflow_key or entry.specialist, 16):<16} "
        f"{entry.status:<9} {duration(entry.elapsed_s):>6}  {clip(mark, 90)}"
    )


def _activity(st: Any) -> list[str]:
    """When the agent was last heard from, and the call open now: facts (docs/attention.md)."""
    import time

    def at(ms: int) -> str:
        ago = duration(max(0.0, time.time() - ms / 1000))
        return f"{time.strftime('%H:%M:%S', time.localtime(ms / 1000))} ({ago} ago)"

    lines = []
    if st.last_event_at_ms:
        lines.append(f"  Last activity: {at(st.last_event_at_ms)}")
    elif st.started_at_ms:
        lines.append(f"  Last activity: none since the start at {at(st.started_at_ms)}")
    if st.tool_open_since_ms and st.current_tool:
        lines.append(f"  Open tool: {clip(st.current_tool, 100)} since {at(st.tool_open_since_ms)}")
    return lines


def _detail(st: Any) -> str:
    from specialists.store.view import ACTIVITY_WORDS, doing, elapsed_s

    lines = [
        f"  {st.id}  {clip(st.specialist, 60)} | {st.status} | {duration(elapsed_s(st))} | "
        f"model: {clip(st.model or 'default', 80)} | runner: {clip(st.runner, 20)}"
    ]
    if st.workflow_key:
        lines.append(f"  Key: {clip(st.workflow_key, 128)}")
    if st.title:
        lines.append(f"  Task: {clip(st.title, 200)}")
    if st.active:
        current = doing(st)
        event = st.current_event or ""
        if st.current_tool and not st.progress and event != "waiting_for_events":
            current = f"{ACTIVITY_WORDS.get(event, event)}: {current}"
        lines.append(f"  Current: {clip(current, 100)}" + ("  (STALLED)" if st.stalled else ""))
        lines += _activity(st)
    if st.error:
        lines.append(f"  Error: {clip(st.error, 2000)}")
    if st.needs_attention:
        lines.append(f"  Needs attention: {clip(st.needs_attention, 300)}")
    if st.bead_id:
        lines.append(f"  Bead: {clip(st.bead_id, 100)}")
    if st.session_file:
        lines.append(f"  Session: {clip(st.session_file, 300)}")
    if st.parent_id:
        lines.append(f"  Continues: {st.parent_id}")
    tokens = " ".join(f"{k}={v}" for k, v in st.tokens.items())
    cost = f"  cost ${st.cost_usd:.4f}" if st.cost_usd else ""
    lines.append(
        f"  Events: {st.events} ({st.tool_calls} tool calls){cost}"
        + (f"  tokens {clip(tokens, 200)}" if tokens else "")
    )
    lines += _children_lines(st)
    lines += _ceiling_lines(st)
    return "\n".join(lines)


def _ceiling_lines(st: Any) -> list[str]:
    """Each spend ceiling the job counts against: spent of allowed, and what is left. The
    spend room is loaded only for a job that has one."""
    ceilings = st.ceilings if isinstance(st.ceilings, list) else ()
    if not ceilings:
        return []
    from specialists.features.spend.ceiling import entries

    return [
        f"  Ceiling: {e.whose()}: {clip(e.figures(), 200)} ({e.left()})" for e in entries(ceilings)
    ]


def _children_lines(st: Any) -> list[str]:
    """A workflow's progress and what it spent with its children."""
    from specialists.store.rollup import children, rollup, tokens_in
    from specialists.store.view import progress_words

    if not st.progress:
        return []
    lines = [f"  Progress: {clip(progress_words(st.progress), 200)}"]
    if children(st) is not None:
        spent = rollup(st)
        lines.append(
            f"  With its children: {spent['jobs']} jobs, tokens {tokens_in(spent):,} in / "
            f"{spent['tokens']['output']:,} out, ${spent['cost_usd']:.4f}"
        )
    return lines
