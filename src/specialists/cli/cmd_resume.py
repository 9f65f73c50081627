"""`specialists resume <id> --prompt ...`: continue a finished job's session as a new job."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    from specialists.cli.cmd_run import add_common_run_args

    p = sub.add_parser("resume", help="continue a finished job's session as a new job")
    p.add_argument("job", help="job id or unique prefix")
    add_common_run_args(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from specialists.cli.cmd_run import launch, parse_duration_ms, read_prompt
    from specialists.supervise.plan import JobRequest, open_store, plan_job

    store = open_store()
    job_id = store.resolve(args.job)
    parent = store.read_record(job_id)
    request = JobRequest(
        specialist=parent.specialist,
        prompt=read_prompt(args),
        cwd=Path(args.cwd) if args.cwd else Path(parent.cwd),
        runner=args.runner,
        model=args.model,
        timeout_ms=parse_duration_ms(args.timeout) if args.timeout else None,
        keep_alive=args.keep_alive,
        continue_from=job_id,
    )
    record = plan_job(store, request, foreground=not args.background)
    return launch(store, record, background=args.background, as_json=args.json)
