"""`specialists run <name> --prompt ...`: start a specialist job."""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import TYPE_CHECKING

from specialists.errors import UserError

if TYPE_CHECKING:
    from specialists.jobs.records import JobRecord
    from specialists.jobs.store import JobStore

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)?")
_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, None: 1000}


def parse_duration_ms(text: str) -> int:
    """'90' or '90s' -> 90000; also ms, m, h suffixes."""
    match = _DURATION.fullmatch(text.strip())
    # Under 1 ms rounds to 0, which means "no timeout" downstream: refuse it instead.
    if not match or float(match.group(1)) * _UNITS_MS[match.group(2)] < 1:
        raise UserError(f"invalid duration {text!r}", hint="use e.g. 90, 90s, 1500ms, 5m, 1h")
    return int(float(match.group(1)) * _UNITS_MS[match.group(2)])


def add_common_run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prompt", "-p", help="the task; read from stdin when omitted or '-'")
    p.add_argument("--background", "-b", action="store_true", help="return the job id at once")
    p.add_argument("--model", help="override the model (provider/model)")
    p.add_argument("--runner", help="pi, claude, codex, command or native")
    p.add_argument("--timeout", help="kill the job after this long (90s, 5m, 1500ms)")
    p.add_argument("--keep-alive", action="store_true", default=None, help="accept follow-ups")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--cwd", help="working directory for the agent (default: current)")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a specialist (foreground, or --background)")
    p.add_argument("name", help="specialist name (see `specialists list`)")
    add_common_run_args(p)
    p.add_argument(
        "--continue", dest="continue_from", metavar="JOB", help="continue a job's session"
    )
    p.add_argument("--var", action="append", default=[], metavar="K=V", help="template variable")
    p.add_argument("--bead", help="run a bead (issue) as the prompt")
    p.add_argument("--context-depth", type=int, default=1, help="blocker levels for --bead")
    p.add_argument("--no-beads", action="store_true", help="do not track this run as a bead")
    p.set_defaults(run=run)


def read_prompt(args: argparse.Namespace, *, required: bool = True) -> str:
    prompt = args.prompt
    if prompt is None or prompt == "-":
        if sys.stdin is None or sys.stdin.isatty():
            if not required:
                return ""
            raise UserError("no prompt given", hint="pass --prompt TEXT or pipe it on stdin")
        prompt = _read_stdin_text()
    return str(prompt)  # plan_job refuses an empty or undecodable one


def _read_stdin_text() -> str:
    """All of stdin as UTF-8; invalid bytes are refused, not passed on to the agent."""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # a text-only stream (tests, embedding)
        return str(sys.stdin.read())
    data = buffer.read()
    try:
        return str(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UserError(f"the prompt on stdin is not valid UTF-8 (at byte {exc.start})") from None


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from specialists.supervise.plan import JobRequest, open_store, plan_job

    variables = {}
    for item in args.var:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f"invalid --var {item!r}", hint="use --var name=value")
        variables[key] = value
    store = open_store()
    prompt = read_prompt(args, required=args.bead is None)
    request = JobRequest(
        specialist=args.name,
        prompt=prompt,
        cwd=Path(args.cwd) if args.cwd else None,
        runner=args.runner,
        model=args.model,
        timeout_ms=parse_duration_ms(args.timeout) if args.timeout else None,
        keep_alive=args.keep_alive,
        continue_from=args.continue_from,
        variables=variables,
        bead=args.bead,
        context_depth=args.context_depth,
        track_bead=not args.no_beads,
    )
    record = plan_job(store, request, foreground=not args.background)
    return launch(store, record, background=args.background, as_json=args.json)


def launch(store: JobStore, record: JobRecord, *, background: bool, as_json: bool) -> int:
    from specialists.supervise.plan import run_foreground, start_background

    if background:
        job_id = start_background(store, record)
        print(json.dumps({"id": job_id}) if as_json else job_id)
        return 0
    from specialists.cli.foreground import ForegroundObserver

    observer = ForegroundObserver(quiet=as_json)
    status = run_foreground(store, record, observer)
    result = store.read_result(status.id)
    if as_json:
        print(
            json.dumps(
                {"id": status.id, "status": status.status, "error": status.error, "result": result}
            )
        )
    else:
        observer.finish(result)
        if status.status == "error":
            print(f"error: job {status.id} failed: {status.error}", file=sys.stderr)
        elif status.status == "cancelled":
            print(f"job {status.id} cancelled", file=sys.stderr)
    return {"done": 0, "cancelled": 130}.get(status.status, 1)
