"""`specialists threads [--tree] [--json]`: every child thread, its phase and its transport."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specialists.project import Project


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("threads", help="list child threads (jobs spawned by spawn_thread)")
    p.add_argument("--tree", action="store_true", help="each child under its parent thread")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, project: Project) -> int:
    import json
    import sys

    from specialists.base.display import display_line
    from specialists.features.threads.listing import row_dict, thread_rows, tree_order
    from specialists.features.threads.transports import supports

    rows, problems = thread_rows(project.store.root)
    for problem in problems:
        print(f"warning: {display_line(problem, 300)}", file=sys.stderr)
    if args.json:
        print(json.dumps({"threads": [row_dict(c) for c in rows]}))
        return 0
    if not rows:
        print("no threads")
        return 0
    ordered = tree_order(rows) if args.tree else [(0, c) for c in rows]
    for depth, child in ordered:
        r = child.record
        phase = child.phase + (" (failed)" if child.failed else "")
        where = f" sandbox-{r.sandbox}" if r.sandbox else ""
        parent = "" if args.tree and depth else f" parent {r.parent}"
        text = display_line(r.instructions, 60)
        print(f"{'  ' * depth}{r.id}  {phase:<16} job {r.job_id} {r.runner}{where}{parent}  {text}")
    print()
    for runner in sorted({c.record.runner for c in rows}):
        print(f"{runner}: {supports(runner)}")
    return 0
