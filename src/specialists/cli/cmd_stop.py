"""`specialists stop <id>`: graceful abort, then SIGTERM, then SIGKILL; ends `cancelled`."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import time

ACK_TIMEOUT_S = 1.5
STOP_TIMEOUT_S = 12.0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stop", help="stop a job")
    p.add_argument("job", help="job id or unique prefix")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from specialists.cli.control_wait import wait_for_ack
    from specialists.jobs.control import post_request
    from specialists.jobs.paths import find_project_root, state_dir
    from specialists.jobs.recovery import recover_if_dead, supervisor_alive
    from specialists.jobs.store import JobStore
    from specialists.jobs.view import current_status

    store = JobStore(state_dir(find_project_root()))
    job_id = store.resolve(args.job)
    st = current_status(store, job_id)
    if not st.active:
        print(f"job {job_id} is already {st.status}; nothing to stop")
        return 0
    request = post_request(store.job_dir(job_id), "stop")
    if wait_for_ack(store, job_id, request.id, ACK_TIMEOUT_S) is None and supervisor_alive(st):
        # The supervisor is not reading its inbox (busy in a pre-script, or hung): signal it.
        _signal(st.supervisor_pid, st.supervisor_start_time, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while time.monotonic() < deadline:
        st = current_status(store, job_id)
        if not st.active:
            break
        time.sleep(0.05)
    else:
        _signal(st.supervisor_pid, st.supervisor_start_time, signal.SIGKILL)
        time.sleep(0.1)
        st = recover_if_dead(
            store, job_id, current_status(store, job_id), final="cancelled", reason="stopped"
        )
    if st.status == "cancelled":
        print(f"stopped: job {job_id} cancelled")
        return 0
    if st.active:
        print(f"error: job {job_id} did not stop (status {st.status})", file=sys.stderr)
        return 1
    print(f"job {job_id} ended as {st.status} before it could be cancelled")
    return 0


def _signal(pid: int | None, start_time: int | None, sig: int) -> None:
    from specialists.jobs.liveness import is_alive

    if pid and is_alive(pid, start_time):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
