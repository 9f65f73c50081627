"""`specialists steer <id> <msg>` and `specialists follow-up <id> <msg>`."""

from __future__ import annotations

import argparse
import sys


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


def run(args: argparse.Namespace) -> int:
    from specialists.jobs.actions import send_message
    from specialists.jobs.paths import find_project_root, state_dir
    from specialists.jobs.store import JobStore

    store = JobStore(state_dir(find_project_root()))
    job_id = store.resolve(args.job)
    what = args.kind.replace("_", "-")
    outcome = send_message(store, job_id, args.kind, " ".join(args.message), wait=not args.no_wait)
    if outcome.state == "refused":
        if outcome.request_id is None:  # the job had already ended
            hint = f"; continue it with: specialists resume {job_id} --prompt ..."
            print(f"failed: {outcome.reason}{hint}", file=sys.stderr)
        else:
            print(f"failed: {outcome.reason}", file=sys.stderr)
        return 1
    if outcome.state == "pending":
        print(f"pending: job {job_id} has not picked up request {outcome.request_id} yet")
    elif outcome.state == "queued":
        print(f"queued until the current run ends: {what} to job {job_id}")
    else:
        print(f"delivered: {what} to job {job_id}")
    return 0
