"""`specialists resume <id> --prompt ...`: continue a finished job's session as a new job."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specialists.project import Project


def add_parser(sub: argparse._SubParsersAction) -> None:
    from specialists.fronts.cli.cmd_run import (
        add_attention_args,
        add_ceiling_args,
        add_common_run_args,
    )

    p = sub.add_parser("resume", help="continue a finished job's session as a new job")
    p.add_argument("job", help="job id or unique prefix")
    add_common_run_args(p)
    add_attention_args(p)
    add_ceiling_args(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace, project: Project) -> int:
    from pathlib import Path

    from specialists.features.missions.launch import MissionChoice
    from specialists.fronts.cli.cmd_run import limits_of, plan_and_launch, read_prompt, timeout_ms
    from specialists.fronts.starting import Wishes
    from specialists.supervise.plan import JobRequest

    store = project.store
    job_id = store.resolve(args.job)
    paused = _resume_paused(project, job_id, args)
    if paused is not None:
        return paused
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
        attention_after=args.attention_after,
        watchdog=args.watchdog,
    )
    # A new job and a new ceiling: the limits it ran with, unless new ones are given.
    limits = limits_of(args) or {k: v for k, v in parent.ceiling.items() if k != "mission"}
    return plan_and_launch(
        project,
        request,
        background=args.background,
        as_json=args.json,
        attach=args.attach,
        # it joins the resumed job's mission, if it had one, and counts against its ceiling
        wishes=Wishes(mission=MissionChoice("follow"), limits=limits),
    )


def _resume_paused(project: Project, job_id: str, args: argparse.Namespace) -> int | None:
    """A job that waits (paused by `interrupt` or a usage limit, or keep-alive) is resumed in
    place: the prompt goes to it as a follow-up (optional after a usage limit). None: the
    job has ended; resume it as a new job."""
    import sys

    from specialists.fronts.cli.cmd_run import read_prompt
    from specialists.store.view import current_status
    from specialists.supervise.actions import send_message

    st = current_status(project.store, job_id)
    if st.status != "waiting":
        return None
    prompt = read_prompt(args, required=st.paused_until_ms is None)
    if not prompt:  # paused at a usage limit: resumed before the reset, nothing else to say
        prompt = "resumed by a person before the usage limit's reset: continue where you left off"
    if args.attention_after is not None or args.watchdog is not None:
        print(
            f"warning: --attention-after and --watchdog apply to a new job; job {job_id} "
            "continues in place with its own",
            file=sys.stderr,
        )
    outcome = send_message(project.store, job_id, "follow_up", prompt)
    if outcome.state == "refused":
        print(f"error: resume refused: {outcome.reason} (see: specialists feed --job {job_id})",
              file=sys.stderr)  # fmt: skip
        return 1
    print(f"resumed: job {job_id} continues in place (follow-up {outcome.state})")
    return 0
