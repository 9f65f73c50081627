"""`specialists status [--job ID] [--json]`: active jobs first, finished ones summarised."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

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
    from specialists.jobs.view import current_status, overview

    store = JobStore(state_dir(find_project_root()))
    if args.job is not None:
        st = current_status(store, store.resolve(args.job))
        print(json.dumps(st.to_dict()) if args.json else _detail(st))
        return 0
    active, finished, problems = overview(store)
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    active.sort(key=lambda s: s.started_at_ms, reverse=True)
    finished.sort(key=lambda f: f.started_at_ms, reverse=True)
    shown = finished if args.all else finished[:RECENT_FINISHED]
    counts: dict[str, int] = {}
    for entry in finished:
        counts[entry.status] = counts.get(entry.status, 0) + 1
    if args.json:
        payload: dict[str, Any] = {
            "active": [s.to_dict() for s in active],
            "finished": [entry._asdict() for entry in shown],
            "counts": counts,
        }
        print(json.dumps(payload))
        return 0
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


def _finished_line(entry: Any) -> str:
    mark = {"done": "✓", "cancelled": "cancelled"}.get(entry.status, f"✗ {entry.error or ''}")
    return (
        f"  {entry.id}  {clip(entry.specialist, 14):<14} {entry.status:<9} "
        f"{duration(entry.elapsed_s):>6}  {clip(mark, 60)}"
    )


def _detail(st: Any) -> str:
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
