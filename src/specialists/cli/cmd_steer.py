"""`specialists steer <id> <msg>` and `specialists follow-up <id> <msg>`."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specialists.project import Project


def add_parser(sub: argparse._SubParsersAction) -> None:
    for name, kind, help_text in (
        ("steer", "steer", "inject guidance into a running job"),
        ("follow-up", "follow_up", "send another message to a running or waiting job"),
    ):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("job", help="job id or unique prefix")
        p.add_argument("message", nargs="+", help="the message")
        p.add_argument("--no-wait", action="store_true", help="do not wait for delivery")
        p.set_defaults(run=run, kind=kind)


def run(args: argparse.Namespace, project: Project) -> int:
    from specialists.display import display_line
    from specialists.jobs.actions import send_message

    store = project.store
    job_id = store.resolve(args.job)
    if args.kind == "steer" and not args.no_wait:
        return _steer(project, job_id, " ".join(args.message))
    what = args.kind.replace("_", "-")
    outcome = send_message(store, job_id, args.kind, " ".join(args.message), wait=not args.no_wait)
    if outcome.state == "refused":
        if outcome.request_id is None:  # the job had already ended
            hint = f"continue it with: specialists resume {job_id} --prompt ..."
        else:
            hint = f"see: specialists feed --job {job_id}"
        reason = display_line(outcome.reason, 300)
        print(f"error: {what} refused: {reason} ({hint})", file=sys.stderr)
        return 1
    if outcome.state == "pending":
        print(f"pending: job {job_id} has not picked up request {outcome.request_id} yet")
    elif outcome.state == "queued":
        print(f"queued until the current run ends: {what} to job {job_id}")
    else:
        print(f"delivered: {what} to job {job_id}")
    return 0


def _steer(project: Project, job_id: str, message: str) -> int:
    """Acknowledged steering: wait up to 3 s for the agent's own ack, say the state."""
    from specialists.supervise.steering import steer_job

    outcome = steer_job(project.store, job_id, message)
    if outcome.state == "failed":
        if outcome.request_id is None:  # the job had already ended
            hint = f"continue it with: specialists resume {job_id} --prompt ..."
        else:
            hint = f"see: specialists feed --job {job_id}"
        print(f"error: steer {outcome.describe()} ({hint})", file=sys.stderr)
        return 1
    print(outcome.describe())
    return 0
