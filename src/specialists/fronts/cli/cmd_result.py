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

from specialists.fronts.cli.commands import Plain

TYPE_CHECKING = False  # no `typing`, no `argparse` at run time: a person waits on `result`
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from specialists.project import Project

PLAIN = Plain(
    {"--raw": "raw", "--json": "json", "--wait": "wait", "-w": "wait"},
    "job_id",
    {"raw": False, "json": False, "wait": False, "timeout": None},
    exclusive=("raw", "json"),
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    from specialists.fronts.cli.values import DURATION_HELP, Duration

    p = sub.add_parser("result", help="print a finished job's answer")
    p.add_argument("job_id", metavar="job", help="job id or unique prefix")
    shape = p.add_mutually_exclusive_group()
    shape.add_argument("--raw", action="store_true", help="the answer's exact bytes, nothing added")
    shape.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--wait", "-w", action="store_true", help="wait for the job to finish")
    p.add_argument(
        "--timeout", type=Duration, help=f"how long to --wait (default: forever; {DURATION_HELP})"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace, project: Project) -> int:
    from specialists.base.errors import Failed
    from specialists.fronts.cli.commands import error_text
    from specialists.fronts.cli.foreground import shown
    from specialists.fronts.jobs import person, result

    timeout = None
    if args.timeout is not None:
        if warning := args.timeout.warning("--timeout"):
            print(f"warning: {warning}", file=sys.stderr)
        timeout = args.timeout.ms / 1000
    try:
        answer: Any = result(person(project), args.job_id, wait=args.wait, timeout=timeout)
    except Failed as exc:  # said here, so that the person still hears of their events
        if not args.json:
            print(f"error: {error_text(exc.one_line())}", file=sys.stderr)
            return exc.exit_code
        answer = {**exc.data, "result": None}
    if args.json:
        keys = (("id", "job_id"), ("status", "status"), ("error", "error"), ("result", "result"))
        print(json.dumps({k: answer.get(key) for k, key in keys}, ensure_ascii=False))
        return 0 if answer["result"] is not None else 1
    if answer["status"] == "waiting":
        print(f"job {answer['job_id']} is waiting for a follow-up; latest answer:", file=sys.stderr)
    text = answer["result"] if args.raw else shown(answer["result"], sys.stdout)
    sys.stdout.write(text)
    if not args.raw and not text.endswith("\n"):
        sys.stdout.write("\n")
    sys.stdout.flush()
    return 0
