"""`specialists result <id> [--raw | --json] [--wait [--timeout D]]`: the job's final answer.

Reading the answer clears the job's completion notice (notices.py): whoever reads it has
it, so no banner will repeat it. On a terminal the answer's control characters are shown
as escapes; `--raw`, or output into a pipe or file, gives its exact text. `--json` prints
the outcome as `run --json` does, `{"id", "status", "error", "result"}`, whatever the status
(exit 1 unless the job has an answer).
"""

from __future__ import annotations

import json
import sys
import time

from specialists.fronts.cli.commands import Plain

TYPE_CHECKING = False  # no `typing`, no `argparse` at run time: a person waits on `result`
if TYPE_CHECKING:
    import argparse

    from specialists.project import Project

PLAIN = Plain(
    {"--raw": "raw", "--json": "json", "--wait": "wait", "-w": "wait"},
    "job",
    {"raw": False, "json": False, "wait": False, "timeout": None},
    exclusive=("raw", "json"),
)
WAIT_POLL_S = 0.05
HEALTH_CHECK_S = 1.0  # how often a --wait re-checks that the supervisor is alive


def add_parser(sub: argparse._SubParsersAction) -> None:
    from specialists.fronts.cli.values import DURATION_HELP, Duration

    p = sub.add_parser("result", help="print a finished job's answer")
    p.add_argument("job", help="job id or unique prefix")
    shape = p.add_mutually_exclusive_group()
    shape.add_argument("--raw", action="store_true", help="the answer's exact bytes, nothing added")
    shape.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--wait", "-w", action="store_true", help="wait for the job to finish")
    p.add_argument(
        "--timeout", type=Duration, help=f"how long to --wait (default: forever; {DURATION_HELP})"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace, project: Project) -> int:
    from specialists.base.display import display_line
    from specialists.fronts.cli.foreground import shown
    from specialists.store.view import current_status, read_answer

    store = project.store
    job_id = store.resolve(args.job)
    st = current_status(store, job_id)
    if args.wait:
        if args.timeout is not None and (warning := args.timeout.warning("--timeout")):
            print(f"warning: {warning}", file=sys.stderr)
        deadline = None if args.timeout is None else time.monotonic() + args.timeout.ms / 1000
        checked = time.monotonic()
        while st.status in ("starting", "running"):
            if deadline is not None and time.monotonic() >= deadline:
                break
            time.sleep(WAIT_POLL_S)
            if time.monotonic() - checked > HEALTH_CHECK_S:
                st, checked = current_status(store, job_id), time.monotonic()
            else:
                st = store.read_status(job_id) or st
    answer = read_answer(store, st)
    if args.json:
        outcome = {"id": st.id, "status": st.status, "error": st.error, "result": answer}
        print(json.dumps(outcome, ensure_ascii=False))
        return 0 if answer is not None else 1
    if answer is not None:
        if st.status == "waiting":
            print(f"job {job_id} is waiting for a follow-up; latest answer:", file=sys.stderr)
        text = answer if args.raw else shown(answer, sys.stdout)
        sys.stdout.write(text)
        if not args.raw and not text.endswith("\n"):
            sys.stdout.write("\n")
        sys.stdout.flush()
        return 0
    if st.active:
        hint = f"wait for it: specialists result {job_id} --wait"
        print(f"error: job {job_id} is {st.status}; no result yet ({hint})", file=sys.stderr)
        return 1
    why = f": {display_line(st.error, 300)}" if st.error else ""
    hint = f"see: specialists feed --job {job_id}"
    print(f"error: job {job_id} ended {st.status}{why}; it has no result ({hint})", file=sys.stderr)
    return 1
