"""`specialists stop <id>`: graceful abort, then SIGTERM, then SIGKILL; ends `cancelled`."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specialists.project import Project


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stop", help="stop a job")
    p.add_argument("job", help="job id or unique prefix")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, project: Project) -> int:
    from specialists.supervise.actions import stop_job

    store = project.store
    outcome = stop_job(store, store.resolve(args.job))
    if outcome.kind == "still_running":
        hint = f"see: specialists status --job {outcome.job_id}"
        print(f"error: {outcome.describe()} ({hint})", file=sys.stderr)
        return 1
    print(outcome.describe())
    return 0
