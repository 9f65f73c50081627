"""`specialists gc [--days N]`: delete finished jobs older than the TTL."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specialists.project import Project


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gc", help="delete finished jobs older than SPECIALISTS_JOB_TTL_DAYS (7)")
    p.add_argument("--days", type=float, default=None, help="override the age limit")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, project: Project) -> int:
    import sys

    from specialists.base.display import display_line
    from specialists.base.errors import UserError
    from specialists.events.notices import prune
    from specialists.store.gc import collect

    if args.days is not None and not args.days >= 0:  # also refuses nan
        raise UserError("--days must be zero or more")
    report = collect(project.store, days=args.days)
    for line in report.warnings + report.problems:  # a bad TTL, damaged jobs left in place
        print(f"warning: {display_line(line, 300)}", file=sys.stderr)
    for problem in prune(project.store.root):
        print(f"warning: {display_line(problem, 300)}", file=sys.stderr)
    print(f"removed {len(report.removed)} finished job(s); {report.kept_active} active kept")
    _prune_missions(project)
    return 0


def _prune_missions(project: Project) -> None:
    """Closed missions past SPECIALISTS_MISSION_TTL_DAYS (30) go too (docs/missions.md)."""
    import sys

    from specialists.base.display import display_line
    from specialists.features.missions.ops import prune
    from specialists.features.missions.store import MissionStore

    pruned = prune(MissionStore(project.store.root))
    for line in pruned.warnings:
        print(f"warning: {display_line(line, 300)}", file=sys.stderr)
    if pruned.removed:
        print(f"removed {len(pruned.removed)} closed mission(s)")
