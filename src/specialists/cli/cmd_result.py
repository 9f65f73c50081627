"""`specialists result <id> [--raw] [--wait [--timeout S]]`: the job's final answer."""

from __future__ import annotations

import argparse
import sys
import time

WAIT_POLL_S = 0.05


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("result", help="print a finished job's answer")
    p.add_argument("job", help="job id or unique prefix")
    p.add_argument("--raw", action="store_true", help="the answer's exact bytes, nothing added")
    p.add_argument("--wait", "-w", action="store_true", help="wait for the job to finish")
    p.add_argument(
        "--timeout", type=float, default=None, help="seconds to --wait (default: forever)"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from specialists.errors import UserError
    from specialists.jobs.paths import find_project_root, state_dir
    from specialists.jobs.store import JobStore
    from specialists.jobs.view import current_status

    if args.timeout is not None and not args.timeout >= 0:  # also refuses nan
        raise UserError(f"--timeout must be zero or more seconds, not {args.timeout}")
    store = JobStore(state_dir(find_project_root()))
    job_id = store.resolve(args.job)
    st = current_status(store, job_id)
    if args.wait:
        deadline = None if args.timeout is None else time.monotonic() + args.timeout
        checked = time.monotonic()
        while st.status in ("starting", "running"):
            if deadline is not None and time.monotonic() >= deadline:
                break
            time.sleep(WAIT_POLL_S)
            # Re-check the supervisor's health now and then, not on every poll.
            if time.monotonic() - checked > 1.0:
                st, checked = current_status(store, job_id), time.monotonic()
            else:
                st = store.read_status(job_id) or st
    if st.status == "done":
        return _print(store.read_result(job_id) or "", raw=args.raw)
    if st.status == "waiting":
        answer = store.latest_answer(job_id)
        if answer is not None:
            print(f"job {job_id} is waiting for a follow-up; latest answer:", file=sys.stderr)
            return _print(answer, raw=args.raw)
    detail = f": {st.error}" if st.error else ""
    print(f"job {job_id} is {st.status}{detail}", file=sys.stderr)
    if st.status == "error":
        print(f"see: specialists feed --job {job_id}", file=sys.stderr)
    return 1


def _print(text: str, *, raw: bool) -> int:
    sys.stdout.write(text)
    if not raw and not text.endswith("\n"):
        sys.stdout.write("\n")
    sys.stdout.flush()
    return 0
