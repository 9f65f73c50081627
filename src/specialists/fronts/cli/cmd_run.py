"""`specialists run <name> --prompt ...`: start a specialist job.

A plain form (`run NAME --prompt TEXT --background`, `PLAIN`) is read without argparse, which
this module imports only to build its parser: a foreground run is waited on."""

from __future__ import annotations

import json
import sys

from specialists.base.errors import UserError
from specialists.fronts.cli import collector
from specialists.fronts.cli.commands import Plain
from specialists.fronts.starting import Wishes

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from specialists.project import Project
    from specialists.store.records import JobRecord
    from specialists.supervise.plan import JobRequest
    from specialists.supervise.start import Started

# A foreground run's exit code by final status (docs/cli.md).
EXIT_BY_STATUS = {"done": 0, "cancelled": 130}


# `run`'s plain forms (commands.py): its flags, its options that argparse takes as given (no
# `type=` but `nonempty`, whose empty value the plain form leaves to argparse), its defaults.
_FLAGS = ("background", "attach", "keep_alive", "json", "no_beads", "sandbox", "no_mission")
_VALUES: tuple[str, ...] = ("prompt", "model", "runner", "cwd", "executor", "bead", "mission")
_VALUES += ("gate", "attention_after", "max_cost", "max_tokens", "approve_cost")
PLAIN = Plain(
    {"-b": "background", **{"--" + d.replace("_", "-"): d for d in _FLAGS}},
    "name",
    {
        **dict.fromkeys((*_VALUES, "timeout", "continue_from", "gate_timeout"), None),
        **dict.fromkeys(_FLAGS, False),
        "keep_alive": None,  # a flag whose absence means "as the definition says"
        "watchdog": None,
        "var": [],
        "context_depth": 1,
    },
    options={
        "-p": "prompt",
        "--continue": "continue_from",
        **{"--" + d.replace("_", "-"): d for d in _VALUES},
    },
)


def add_common_run_args(p: argparse.ArgumentParser) -> None:
    from specialists.fronts.cli.values import DURATION_HELP, Duration, nonempty

    p.add_argument("--prompt", "-p", help="the task; read from stdin when omitted or '-'")
    p.add_argument("--background", "-b", action="store_true", help="return the job id at once")
    p.add_argument(
        "--attach",
        action="store_true",
        help="run in the background and follow it here; Ctrl-C detaches",
    )
    p.add_argument("--model", type=nonempty, help="override the model (provider/model)")
    p.add_argument("--runner", type=nonempty, help="pi, claude, codex, command or native")
    p.add_argument(
        "--timeout", type=Duration, help=f"kill the job after this long ({DURATION_HELP})"
    )
    p.add_argument("--keep-alive", action="store_true", default=None, help="accept follow-ups")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--cwd", type=nonempty, help="working directory for the agent (default: current)"
    )


def add_parser(sub: argparse._SubParsersAction) -> None:
    import argparse

    from specialists.fronts.cli.values import DURATION_HELP, Duration, nonempty

    p = sub.add_parser("run", help="run a specialist (foreground, or --background)")
    p.add_argument("name", help="specialist name (see `specialists list`)")
    add_common_run_args(p)
    p.add_argument("--executor", type=nonempty, help="where the agent runs: local or ray")
    p.add_argument(
        "--continue", dest="continue_from", metavar="JOB", help="continue a job's session"
    )
    p.add_argument("--var", action="append", default=[], metavar="K=V", help="template variable")
    p.add_argument("--bead", help="run a bead (issue) as the prompt")
    p.add_argument("--context-depth", type=int, default=1, help="blocker levels for --bead")
    p.add_argument("--no-beads", action="store_true", help="do not track this run as a bead")
    p.add_argument(
        "--sandbox", action="store_true", help="run in a new git worktree (sandbox-<id> branch)"
    )
    p.add_argument("--mission", metavar="ID", help="link the run to this mission (it must exist)")
    # A plain run makes no mission any more (docs/missions.md); kept so old scripts still run.
    p.add_argument("--no-mission", action="store_true", help=argparse.SUPPRESS)
    p.add_argument(
        "--gate",
        metavar="CMD",
        type=nonempty,
        help="a verification command run in the job's tree when it ends; failing fails it",
    )
    p.add_argument(
        "--gate-timeout", type=Duration, help=f"kill the gate after this long ({DURATION_HELP})"
    )
    add_attention_args(p)
    add_ceiling_args(p)
    p.set_defaults(run=run)


def add_ceiling_args(p: argparse.ArgumentParser) -> None:
    """`--max-cost`, `--max-tokens` and `--approve-cost` (docs/spend.md): run, workflow run."""
    p.add_argument(
        "--max-cost", metavar="USD", help="what the job and every job below it may spend ($)"
    )
    p.add_argument(
        "--max-tokens", metavar="N", help="... in tokens (input + output; 200000, 200k, 1.5M)"
    )
    p.add_argument(
        "--approve-cost",
        metavar="USD",
        help="pre-approve fan-outs estimated up to this (no approval is asked below it)",
    )


def limits_of(args: argparse.Namespace) -> dict[str, Any]:
    """job.json `ceiling` from the flags (the mission's is added as the job starts)."""
    from specialists.features.spend.ceiling import own_ceiling

    return own_ceiling(args.max_tokens, args.max_cost, approved_usd=args.approve_cost)


def add_attention_args(p: argparse.ArgumentParser) -> None:
    """`--attention-after` and `--watchdog` (docs/attention.md): run and resume."""
    import argparse

    from specialists.fronts.cli.values import nonempty

    p.add_argument(
        "--attention-after",
        metavar="DURATION",
        type=nonempty,
        help="tell the owner after this long without activity (30s, 5m, 1h), or off",
    )
    p.add_argument(
        "--watchdog",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="have the reviewer check each turn's change to the working tree",
    )


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
    """All of stdin as UTF-8; invalid bytes are refused, not passed on to the agent. Read up
    to what a job's launch record holds, and no further: `yes | specialists run x` is one
    line, not a process that grows until the machine runs out of memory."""
    from specialists.store.files import size_text
    from specialists.store.jobs import MAX_RECORD

    buffer = getattr(sys.stdin, "buffer", None)
    data = (buffer or sys.stdin).read(MAX_RECORD + 1)  # (a text-only stream: tests, embedding)
    if len(data) > MAX_RECORD:
        raise UserError(
            f"the prompt on stdin is over {size_text(MAX_RECORD)}, more than a job holds",
            hint="put long material in a file and name it in the prompt",
        )
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"the prompt on stdin is not valid UTF-8 (at byte {exc.start})") from None


def timeout_ms(args: argparse.Namespace) -> int | None:
    """The --timeout in ms; a bare small number (likely meant as seconds) gets a warning."""
    if args.timeout is None:
        return None
    warning = args.timeout.warning("--timeout")
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    ms: int = args.timeout.ms
    return ms


def run(args: argparse.Namespace, project: Project) -> int:
    # Starting a job loads some 150 modules: the collector is held until the job is
    # supervised here (`launch`) or the command ends (collector.py).
    collector.hold()
    try:
        return _run(args, project)
    finally:
        collector.collect_from_here()


def _run(args: argparse.Namespace, project: Project) -> int:
    from pathlib import Path

    from specialists.supervise.plan import JobRequest

    mission = None  # a plain run is on no mission: the mission room is not even imported
    if args.mission is not None or args.continue_from:
        from specialists.features.missions.launch import choose

        mission = choose(
            mission_id=args.mission,
            disabled=args.no_mission,
            default="follow" if args.continue_from else "none",  # a continued job stays on its own
        )
    variables = {}
    for item in args.var:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f"invalid --var {item!r}", hint="use --var name=value")
        variables[key] = value
    prompt = read_prompt(args, required=args.bead is None)
    request = JobRequest(
        specialist=args.name,
        prompt=prompt,
        cwd=Path(args.cwd) if args.cwd else None,
        runner=args.runner,
        model=args.model,
        timeout_ms=timeout_ms(args),
        keep_alive=args.keep_alive,
        continue_from=args.continue_from,
        variables=variables,
        bead=args.bead,
        context_depth=args.context_depth,
        track_bead=not args.no_beads,
        executor=args.executor,
        attention_after=args.attention_after,
        watchdog=args.watchdog,
    )
    gate = None
    if args.gate is not None:
        from specialists.features.gates.spec import DEFAULT_TIMEOUT_S, parse_gate

        seconds = DEFAULT_TIMEOUT_S if args.gate_timeout is None else args.gate_timeout.ms / 1000
        gate = parse_gate({"command": args.gate, "timeout_s": seconds}, where="--gate").to_dict()
    elif args.gate_timeout is not None:
        raise UserError("--gate-timeout needs --gate", hint='e.g. --gate "pytest -q"')
    return plan_and_launch(
        project,
        request,
        background=args.background,
        as_json=args.json,
        attach=args.attach,
        wishes=Wishes(sandbox=args.sandbox, mission=mission, limits=limits_of(args), gate=gate),
    )


def plan_and_launch(
    project: Project,
    request: JobRequest,
    *,
    background: bool,
    as_json: bool,
    attach: bool = False,
    wishes: Wishes,
) -> int:
    """Plan the job, start it, and show what happened (shared by `run` and `resume`)."""
    from specialists.fronts.starting import start_run
    from specialists.store.view import read_answer

    background = background or attach  # --attach: its own supervisor, followed here
    observer = None
    if not background:
        from specialists.fronts.cli.foreground import ForegroundObserver

        observer = ForegroundObserver(quiet=as_json)

    def plan() -> JobRecord:
        return project.plan(request, foreground=not background, warnings=warnings)

    def start(record: JobRecord) -> Started:
        if background:
            return project.start(record, warnings=warnings)
        return project.start(
            record, here=True, observer=observer, handle_signals=True, warnings=warnings
        )

    warnings: list[str] = []
    try:
        started = start_run(project, plan, wishes, start, warnings)
    finally:
        _warn(warnings)
    if started.sandbox:
        made = started.sandbox
        print(f"sandbox {made['id']}: {made['path']} on {made['branch']}", file=sys.stderr)
    if started.mission_id and not as_json:
        print(f"mission {started.mission_id}", file=sys.stderr)
    job_id = started.job.id
    if attach:
        from specialists.fronts.cli.attach import follow

        ended = follow(project, job_id, as_json=as_json)
        if ended is None or ended.status == "waiting":  # detached, or answered and waits
            return 0
        return EXIT_BY_STATUS.get(ended.status, 1)
    if observer is None:
        print(json.dumps({"id": job_id}) if as_json else job_id)
        return 0
    collector.collect_from_here()  # what the start loaded stays; the job is collected
    status = started.job.run()
    result = read_answer(project.store, status)  # the caller has it now: no banner for it
    if as_json:
        print(
            json.dumps(
                {"id": status.id, "status": status.status, "error": status.error, "result": result}
            )
        )
    else:
        observer.finish(result)
        if status.status == "error":
            observer.fail(f"job {status.id} failed: {status.error}")
        elif status.status == "cancelled":
            observer.fail(f"job {status.id} cancelled")
    return EXIT_BY_STATUS.get(status.status, 1)


def _warn(warnings: list[str]) -> None:
    from specialists.base.display import display_line

    for warning in warnings:
        print(f"warning: {display_line(warning, 400)}", file=sys.stderr)
