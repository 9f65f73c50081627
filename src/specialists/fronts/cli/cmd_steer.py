"""`specialists steer <id> <msg>` and `specialists follow-up <id> <msg>`.

`steer` takes a comma list of ids (each steered, one overall state), `--children` (the job's
running children instead of the job) and `--recover` (a top-level job that misses the ack is
interrupted and resumed with the message). Exit 0 for delivered, scheduled, pending and
recovered, PARTIAL_EXIT when a multi-job steer reached some and not others, 1 when it failed.
"""

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
        if kind == "steer":
            p.add_argument(
                "--children",
                action="store_true",
                help="steer the job's running children (a workflow's, a parent's threads)",
            )
            p.add_argument(
                "--recover",
                action="store_true",
                help="a missed acknowledgement interrupts the job and resumes it with the "
                "message (top-level jobs only; it cancels a tool call in progress)",
            )
        p.set_defaults(run=run, kind=kind)


def run(args: argparse.Namespace, project: Project) -> int:
    from specialists.base.display import display_line
    from specialists.supervise.actions import send_message

    store = project.store
    if args.kind == "steer":
        many = _many(args, project)
        if many is not None:
            return many
    job_id = store.resolve(args.job)
    if args.kind == "steer" and args.recover and args.no_wait:
        from specialists.base.errors import UserError

        raise UserError("--recover waits for the acknowledgement; drop --no-wait")
    if args.kind == "steer" and not args.no_wait:
        return _steer(project, job_id, " ".join(args.message), recover=args.recover)
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


PARTIAL_EXIT = 5


def _many(args: argparse.Namespace, project: Project) -> int | None:
    """A steer of several jobs (a comma list, or --children); None for a single job."""
    from specialists.base.errors import UserError
    from specialists.supervise.steer_fanout import steer_children, steer_many

    refs = [r for r in args.job.split(",") if r]
    if len(refs) < 2 and not args.children:
        return None
    if args.recover:
        raise UserError(
            "steer --recover is for a single top-level job, not several",
            hint="steer them without --recover and act on each state",
        )
    if args.no_wait:
        raise UserError("--no-wait steers one job; a multi-job steer waits for each state")
    if args.children and len(refs) != 1:
        raise UserError("--children takes one parent job", hint="steer <parent> --children ...")
    store, message = project.store, " ".join(args.message)
    ids = [store.resolve(r) for r in refs]
    if args.children:
        outcome = steer_children(store, ids[0], message)
    else:
        outcome = steer_many(store, ids, message)
    if outcome.state == "failed":
        lines = outcome.describe().splitlines()
        print(f"error: steer {lines[0]} (see: specialists feed --job <id>)", file=sys.stderr)
        for line in lines[1:]:
            print(line, file=sys.stderr)
        return 1
    print(outcome.describe())
    return PARTIAL_EXIT if outcome.state == "partial" else 0


def _steer(project: Project, job_id: str, message: str, *, recover: bool) -> int:
    """Acknowledged steering: wait up to 3 s for the agent's own ack, say the state."""
    from specialists.supervise.steer_recover import steer_recovering
    from specialists.supervise.steering import steer_job

    if recover:
        outcome = steer_recovering(project.store, job_id, message)
    else:
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
