"""`specialists claims [release --job JOB [PATH...]]`: which live job claims which files.

Jobs claim files with their claim_files tool (store/claims.py); every front's write guard
refuses another job's write to them. A person sees them here, and may release a job's
claims (all, or the paths named, relative to the current directory) without waiting for
the job to end.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specialists.project import Project


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("claims", help="files live jobs have claimed; release a job's claims")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    actions = p.add_subparsers(dest="action")
    release = actions.add_parser("release", help="release a job's claims (all, or PATHs)")
    release.add_argument("--job", required=True, help="the job holding them")
    release.add_argument("paths", nargs="*", metavar="PATH", help="as claimed; default all")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, project: Project) -> int:
    from specialists.base.display import display_line
    from specialists.store.claims import Claims, key_of_arg

    claims = Claims(project.store.root)
    if args.action == "release":
        job = project.store.resolve(args.job)
        keys = [key_of_arg(p, Path.cwd(), project.root) for p in args.paths] or None
        gone = claims.release(job, keys)
        print(f"released {len(gone)} claim(s) of job {job}")
        return 0
    live = claims.live()
    if args.json:
        print(json.dumps({"claims": [c.to_dict() for c in live]}))
        return 0
    if not live:
        print("no files are claimed")
    for c in live:
        note = f"  {display_line(c.note, 80)}" if c.note else ""
        print(f"{display_line(c.shown(), 200)}  {c.holder()}{note}")
    sys.stdout.flush()
    return 0
