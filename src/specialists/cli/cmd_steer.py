"""`specialists steer <id> <msg>` and `specialists follow-up <id> <msg>`."""

from __future__ import annotations

import argparse
import sys

ACK_TIMEOUT_S = 5.0


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
    return send(args.job, args.kind, " ".join(args.message), wait=not args.no_wait)


def send(job_ref: str, kind: str, message: str, *, wait: bool = True) -> int:
    from specialists.cli.control_wait import wait_for_ack
    from specialists.errors import UserError
    from specialists.jobs.control import post_request
    from specialists.jobs.paths import find_project_root, state_dir
    from specialists.jobs.store import JobStore
    from specialists.jobs.view import current_status

    if not message.strip():
        raise UserError("the message is empty")
    store = JobStore(state_dir(find_project_root()))
    job_id = store.resolve(job_ref)
    st = current_status(store, job_id)
    if not st.active:
        hint = f"; continue it with: specialists resume {job_id} --prompt ..."
        print(f"failed: job {job_id} is {st.status}{hint}", file=sys.stderr)
        return 1
    request = post_request(store.job_dir(job_id), kind, message)  # type: ignore[arg-type]
    if not wait:
        print(f"pending: request {request.id} queued for job {job_id}")
        return 0
    ack = wait_for_ack(store, job_id, request.id, ACK_TIMEOUT_S)
    if ack is None:
        print(f"pending: job {job_id} has not picked up request {request.id} yet")
        return 0
    if ack.get("delivered"):
        how = "queued until the current run ends" if ack.get("queued") else "delivered"
        print(f"{how}: {kind.replace('_', '-')} to job {job_id}")
        return 0
    print(f"failed: {ack.get('reason', 'refused')}", file=sys.stderr)
    return 1
