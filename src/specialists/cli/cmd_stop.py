"""`specialists stop <id>`: graceful abort, then SIGTERM, then SIGKILL; ends `cancelled`."""

from __future__ import annotations

import argparse
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stop", help="stop a job")
    p.add_argument("job", help="job id or unique prefix")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from specialists.jobs.actions import stop_job
    from specialists.jobs.paths import find_project_root, state_dir
    from specialists.jobs.store import JobStore

    store = JobStore(state_dir(find_project_root()))
    outcome = stop_job(store, store.resolve(args.job))
    st = outcome.status
    if not outcome.was_active:
        print(f"job {st.id} is already {st.status}; nothing to stop")
        return 0
    if st.status == "cancelled":
        print(f"stopped: job {st.id} cancelled")
        return 0
    if st.active:
        print(f"error: job {st.id} did not stop (status {st.status})", file=sys.stderr)
        return 1
    print(f"job {st.id} ended as {st.status} before it could be cancelled")
    return 0
