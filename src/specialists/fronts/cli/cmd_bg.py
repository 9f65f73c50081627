"""`specialists bg run|output|cancel|list`: background commands for people (docs/procs.md).

The same core and rules as the agents' bg_* tools (procs/jobs.py). Whose jobs these are:
`--owner KEY` when given; else the session around this command (SPECIALISTS_OWNER, the job
whose agent runs it, a Claude Code session), so a `bg run` typed by an agent wakes that
agent; else the person, `cli-<login name>` (owner.person_key), whose events `specialists
events` shows. `bg output ID` and `bg cancel ID` take any background job of the project, as
`specialists stop` takes any job; `bg cancel --all` and `bg list` are the owner's own
(`bg list --all`: everyone's).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from specialists.fronts.cli.values import Duration, nonempty

if TYPE_CHECKING:
    from specialists.features.procs.jobs import ProcJob
    from specialists.project import Project


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bg", help="run, read, cancel and list background commands")
    bg = p.add_subparsers(dest="bg_command", metavar="ACTION", required=True)

    r = bg.add_parser("run", help="start a shell command in the background")
    r.add_argument("words", nargs="+", metavar="COMMAND", help="the command for sh -c")
    r.add_argument("--name", type=nonempty, help="a short name for lists")
    r.add_argument("--cwd", type=nonempty, help="directory to run in (default: here)")
    r.add_argument("--watch", action="append", default=[], metavar="REGEX",
                   help="lines matching it become job_match events (repeatable)")  # fmt: skip
    r.add_argument("--associative", action="store_true", help="no rate limit on matches")
    r.add_argument("--timeout", type=Duration, help="stop it after this long (30s, 5m, 1h)")
    r.add_argument("--isolate", action="store_true", help="writes only inside --cwd (bwrap)")
    r.add_argument("--cancel-on-exit", action="store_true",
                   help="cancel it when this shell (or the agent session) exits")  # fmt: skip
    r.add_argument("--owner", type=nonempty, help="the inbox its events go to")
    r.add_argument("--json", action="store_true", help="machine-readable output")
    r.set_defaults(run=run_run)

    o = bg.add_parser("output", help="a background job's output")
    o.add_argument("job", help="job id or unique prefix")
    o.add_argument("--tail", type=int, default=40, help="last N lines (default 40)")
    o.add_argument("--since", type=int, help="from this byte offset instead")
    o.add_argument("--json", action="store_true", help="machine-readable output")
    o.set_defaults(run=run_output)

    c = bg.add_parser("cancel", help="cancel a background job (or --all of yours)")
    c.add_argument("job", nargs="?", help="job id or unique prefix")
    c.add_argument("--all", action="store_true", help="every running job of the owner")
    c.add_argument("--owner", type=nonempty, help="whose jobs --all cancels")
    c.add_argument("--json", action="store_true", help="machine-readable output")
    c.set_defaults(run=run_cancel)

    ls = bg.add_parser("list", help="your background jobs")
    ls.add_argument("--all", action="store_true", help="every owner's")
    ls.add_argument("--owner", type=nonempty, help="whose jobs to list")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    ls.set_defaults(run=run_list)


def bg_owner(explicit: str | None) -> str:
    """See the module docstring."""
    from specialists.base.owner import launching_owner, person_key
    from specialists.events.owners import check_owner

    if explicit:
        return check_owner(explicit)
    keys = [k for k in launching_owner().keys if not k.startswith("agent-")]
    return keys[0] if keys else person_key()


def run_run(args: argparse.Namespace, project: Project) -> int:
    from pathlib import Path

    from specialists.catalog.config import load_config
    from specialists.events.model import EventSource
    from specialists.features.procs.jobs import ProcRequest, start_proc
    from specialists.features.procs.tether import process_tether, session_tether
    from specialists.features.procs.tools import watch_settings
    from specialists.native.tool_settings import settings_from_config

    owner = bg_owner(args.owner)
    config = load_config(project.root)
    for warning in config.warnings:  # unknown keys: named, ignored
        print(f"warning: {warning}", file=sys.stderr)
    settings = settings_from_config(config.raw)
    if args.timeout is not None and (warning := args.timeout.warning("--timeout")):
        print(f"warning: {warning}", file=sys.stderr)
    tether = None
    if args.cancel_on_exit:
        from specialists.base.owner import agent_ancestor

        # Inside an agent session: that session; at a terminal: the shell that ran this.
        tether = session_tether(None) if agent_ancestor() else process_tether(_parent_pid())
    command = " ".join(args.words)
    job, _pid = start_proc(
        project.store.root,
        owner,
        ProcRequest(
            command=command,
            cwd=args.cwd,
            name=args.name or "",
            watch=tuple(args.watch),
            associative=args.associative,
            timeout_s=args.timeout.ms / 1000 if args.timeout is not None else None,
            isolate=args.isolate,
        ),
        base_cwd=Path.cwd(),
        max_jobs=settings.jobs.max,
        settings=watch_settings(settings),
        source=EventSource("bg_run", "cli", {"command": command}),
        tether=tether,
    )
    if args.json:
        print(json.dumps({"id": job.id, "owner": owner, "log": str(job.log_path)}))
        return 0
    print(job.id)  # the id alone on stdout: `id=$(specialists bg run ...)`
    print(f"started background job {job.id}: {_shown(job.options.label)}", file=sys.stderr)
    print(f"  log:    {job.log_path}", file=sys.stderr)
    print(f"  events: {owner} (specialists events --owner {owner})", file=sys.stderr)
    return 0


def run_output(args: argparse.Namespace, project: Project) -> int:
    from specialists.features.procs.jobs import read_output

    got = read_output(project.store, None, args.job, tail=args.tail, since=args.since)
    if args.json:
        payload = {"id": got.job.id, "state": got.job.state, "text": got.text}
        print(json.dumps({**payload, "next_offset": got.next_offset, "size": got.size}))
        return 0
    sys.stdout.write(got.text + ("" if not got.text or got.text.endswith("\n") else "\n"))
    print(f"[{got.job.id} {got.job.state}; {got.size} bytes; next --since {got.next_offset}]",
          file=sys.stderr)  # fmt: skip
    return 0


def run_cancel(args: argparse.Namespace, project: Project) -> int:
    from specialists.base.errors import UserError
    from specialists.features.procs.jobs import cancel_all, cancel_proc

    if args.all == (args.job is not None):
        raise UserError("give a job id or --all", hint="see: specialists bg cancel --help")
    if args.all:
        outcomes = cancel_all(project.store, bg_owner(args.owner))
    else:
        outcomes = [cancel_proc(project.store, None, args.job)]
    if args.json:
        rows = [{"id": o.job.id, "asked": o.asked, "state": o.job.state} for o in outcomes]
        print(json.dumps({"cancelled": rows}))
        return 0
    for outcome in outcomes:
        print(_shown(outcome.describe()))
    if not outcomes:
        print("no background jobs of yours are running")
    return 0


def run_list(args: argparse.Namespace, project: Project) -> int:
    from specialists.features.procs.jobs import list_jobs
    from specialists.features.procs.tools import job_row

    owner = None if args.all else bg_owner(args.owner)
    jobs = list_jobs(project.store, owner)
    if args.json:
        print(json.dumps({"jobs": [{**job_row(j), "owner": j.options.owner} for j in jobs]}))
        return 0
    if not jobs:
        print("no background jobs" + ("" if owner is None else f" for {owner}"))
        return 0
    for job in jobs:
        print(_row(job, with_owner=owner is None))
    return 0


def _row(job: ProcJob, *, with_owner: bool) -> str:
    who = f"  {job.options.owner}" if with_owner else ""
    return f"{job.id}  {job.state:<12}  {job.took():>8}{who}  {_shown(job.options.label)}"


def _shown(text: str) -> str:
    from specialists.base.display import display_line

    return display_line(text, 300)


def _parent_pid() -> int:
    import os

    return os.getppid()
