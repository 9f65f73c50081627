"""`specialists clean` (older name: `gc`): delete finished jobs.

    specialists clean [--days N | --all] [--keep N] [--dry-run]

Without options: finished jobs older than SPECIALISTS_JOB_TTL_DAYS (7), as every `run` start
does. `--all` every finished job, `--keep N` all but the N newest, `--dry-run` only lists
them. Active jobs are never removed. Closed missions past their TTL and acknowledged notices
go too (not on a dry run).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specialists.project import Project


HELP = {
    "clean": "delete finished jobs (older than SPECIALISTS_JOB_TTL_DAYS, 7, by default)",
    "gc": "the older name of clean",
}


def add_parser(sub: argparse._SubParsersAction) -> None:
    for name, text in HELP.items():
        p = sub.add_parser(name, help=text)
        age = p.add_mutually_exclusive_group()
        age.add_argument("--days", type=float, default=None, help="override the age limit")
        age.add_argument("--all", action="store_true", help="every finished job, whatever its age")
        p.add_argument("--keep", type=int, default=None, metavar="N", help="keep the N newest")
        p.add_argument("--dry-run", action="store_true", help="list what would go; remove nothing")
        p.set_defaults(run=run)


def run(args: argparse.Namespace, project: Project) -> int:
    import sys

    from specialists.base.display import display_line
    from specialists.base.errors import UserError
    from specialists.events.notices import prune
    from specialists.store.gc import collect

    if args.days is not None and not args.days >= 0:  # also refuses nan
        raise UserError("--days must be zero or more")
    if args.keep is not None and args.keep < 0:
        raise UserError("--keep must be zero or more")
    report = collect(
        project.store, days=args.days, every=args.all, keep=args.keep, dry_run=args.dry_run
    )
    for line in report.warnings + report.problems:  # a bad TTL, damaged jobs left in place
        print(f"warning: {display_line(line, 300)}", file=sys.stderr)
    freed = _size(report.freed_bytes)
    if args.dry_run:
        for job_id in report.removed:
            print(f"would remove {job_id}")
        print(f"would remove {len(report.removed)} finished job(s) ({freed}); nothing removed")
        return 0
    for problem in prune(project.store.root):
        print(f"warning: {display_line(problem, 300)}", file=sys.stderr)
    print(
        f"removed {len(report.removed)} finished job(s) ({freed} freed);"
        f" {report.kept_active} active kept"
    )
    _prune_missions(project)
    return 0


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    value = n / 1024
    for unit in ("KiB", "MiB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


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
