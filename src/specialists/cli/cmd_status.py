"""`specialists status [--job ID] [--json]`: active jobs first, finished ones summarised."""

from __future__ import annotations

import argparse
import json
import sys

from specialists.cli.render import clip, duration, live_elapsed, status_line

RECENT_FINISHED = 5


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("status", help="show jobs (or one job with --job)")
    p.add_argument("--job", "-j", help="one job, by id or unique prefix")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--all", "-a", action="store_true", help="list every finished job too")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from specialists.jobs.paths import find_project_root, state_dir
    from specialists.jobs.store import JobStore
    from specialists.jobs.view import all_statuses, current_status

    store = JobStore(state_dir(find_project_root()))
    if args.job:
        job_id = store.resolve(args.job)
        st = current_status(store, job_id)
        if args.json:
            print(json.dumps(st.to_dict()))
        else:
            print(_detail(st))
        return 0
    statuses, problems = all_statuses(store)
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    statuses.sort(key=lambda s: s.started_at_ms, reverse=True)
    active = [s for s in statuses if s.active]
    finished = [s for s in statuses if not s.active]
    if args.json:
        print(
            json.dumps(
                {
                    "active": [s.to_dict() for s in active],
                    "finished": [
                        s.to_dict() for s in (finished if args.all else finished[:RECENT_FINISHED])
                    ],
                    "counts": _counts(finished),
                }
            )
        )
        return 0
    if not statuses:
        print("no jobs")
        return 0
    print("── Active Jobs " + "─" * 40)
    if active:
        for st in active:
            print(status_line(st))
    else:
        print("  none")
    if finished:
        shown = finished if args.all else finished[:RECENT_FINISHED]
        counts = ", ".join(f"{n} {k}" for k, n in _counts(finished).items())
        print(f"── Finished ({counts}) " + "─" * 20)
        for st in shown:
            print(status_line(st))
        if len(finished) > len(shown):
            print(f"  … {len(finished) - len(shown)} older (status --all)")
    return 0


def _counts(finished: list) -> dict[str, int]:
    counts: dict[str, int] = {}
    for st in finished:
        counts[st.status] = counts.get(st.status, 0) + 1
    return counts


def _detail(st: object) -> str:
    from specialists.jobs.records import JobStatus

    assert isinstance(st, JobStatus)
    lines = [
        f"  {st.id}  {st.specialist} | {st.status} | {duration(live_elapsed(st))} | "
        f"model: {st.model or 'default'} | runner: {st.runner}"
    ]
    if st.active:
        current = st.current_event or ""
        if st.current_tool:
            current += f" {st.current_tool}"
        lines.append(f"  Current: {clip(current, 100)}" + ("  (STALLED)" if st.stalled else ""))
    if st.error:
        lines.append(f"  Error: {st.error}")
    if st.bead_id:
        lines.append(f"  Bead: {st.bead_id}")
    if st.session_file:
        lines.append(f"  Session: {st.session_file}")
    if st.parent_id:
        lines.append(f"  Continues: {st.parent_id}")
    tokens = " ".join(f"{k}={v}" for k, v in st.tokens.items())
    cost = f"  cost ${st.cost_usd:.4f}" if st.cost_usd else ""
    lines.append(
        f"  Events: {st.events} ({st.tool_calls} tool calls){cost}"
        + (f"  tokens {tokens}" if tokens else "")
    )
    return "\n".join(lines)
