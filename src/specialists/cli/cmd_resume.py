"""`specialists resume <id> --prompt ...`: continue a finished job's session as a new job."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specialists.project import Project


def add_parser(sub: argparse._SubParsersAction) -> None:
    from specialists.cli.cmd_run import add_common_run_args

    p = sub.add_parser("resume", help="continue a finished job's session as a new job")
    p.add_argument("job", help="job id or unique prefix")
    add_common_run_args(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace, project: Project) -> int:
    from pathlib import Path

    from specialists.cli.cmd_run import plan_and_launch, read_prompt, timeout_ms
    from specialists.supervise.plan import JobRequest

    store = project.store
    job_id = store.resolve(args.job)
    parent = store.read_record(job_id)
    request = JobRequest(
        specialist=parent.specialist,
        prompt=read_prompt(args),
        cwd=Path(args.cwd) if args.cwd else Path(parent.cwd),
        runner=args.runner,
        model=args.model,
        timeout_ms=timeout_ms(args),
        keep_alive=args.keep_alive,
        continue_from=job_id,
    )
    from specialists.missions.launch import MissionChoice

    follow = MissionChoice("follow")  # it joins the resumed job's mission, if it had one
    return plan_and_launch(
        project, request, background=args.background, as_json=args.json, mission=follow
    )
