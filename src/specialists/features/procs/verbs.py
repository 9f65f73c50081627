"""The background command ops (seed 001 section 5.1; base/ops.py): the agent tools bg_run,
bg_output, bg_cancel and bg_list, and `specialists bg run|output|cancel|list`, on the procs
room (jobs.py, imported when an op runs).

The caller's owner owns every job it starts: its job_exit and job_match events go to that
inbox. A model reads and cancels only its own jobs; a person at a terminal takes any of the
project's (`bg output ID`, `bg cancel ID`, as `specialists stop` takes any job), and lists
everyone's with `bg list --all`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from specialists.base.ops import Noun, Op
from specialists.base.opschema import Cli, Many, Range, Seconds, Text
from specialists.events.model import EventSource
from specialists.features.procs.spec import (
    MAX_COMMAND_CHARS,
    MAX_NAME_CHARS,
    MAX_SINCE,
    MAX_TAIL_LINES,
    MAX_TIMEOUT_S,
    WatchSettings,
)
from specialists.features.procs.watch import MAX_PATTERN_CHARS, MAX_PATTERNS

if TYPE_CHECKING:
    from specialists.features.procs.jobs import OutputRead, ProcCancel, ProcJob
    from specialists.native.agent_tools import Caller
    from specialists.native.tool_settings import Settings

JobRef = Annotated[str, Text(64, 1)]
Regex = Annotated[str, Text(MAX_PATTERN_CHARS)]


def watch_settings(settings: Settings) -> WatchSettings:
    j = settings.jobs
    return WatchSettings(
        tail_lines=j.tail_lines,
        debounce_ms=j.watch_debounce_ms,
        batch_lines=j.watch_batch_lines,
        per_min=j.watch_events_per_min,
        event_max_chars=settings.events.max_chars,
    )


def run(
    caller: Caller,
    command: Annotated[
        str, Text(MAX_COMMAND_CHARS, 1, line=False), Cli(words=True, metavar="COMMAND")
    ],
    /,
    *,
    name: Annotated[str, Text(MAX_NAME_CHARS)] = "",
    cwd: Annotated[str | None, Text(4096, 1)] = None,
    watch: Annotated[
        list[Regex] | None, Many(MAX_PATTERNS), Cli("--watch", metavar="REGEX")
    ] = None,
    associative: bool = False,
    timeout_seconds: Annotated[
        float | None, Range(1, MAX_TIMEOUT_S), Seconds(), Cli("--timeout")
    ] = None,
    isolate: bool = False,
    cancel_on_exit: bool = False,
) -> dict[str, Any]:
    """Dispatch a shell command (sh -c) to run in the background; returns at once with its
    job id and log path, never waiting for output. A [specialists event] job_exit message
    wakes you when it ends (status, exit code, duration, last lines, log path); lines
    matching `watch` regexes arrive as job_match messages (batched, rate limited;
    associative: true delivers every batch). Do not poll, do not sleep: end your turn or do
    independent work. Use it for builds, test suites, servers, downloads. The job outlives
    your session unless cancel_on_exit: true (use that for servers you need only while you
    work). timeout_seconds stops it; isolate: true allows writes only inside cwd (bubblewrap).

    Args:
        command: Shell command for sh -c.
        name: a short name for lists
        cwd: Directory (default: yours).
        watch: Regexes; matching lines wake you as job_match events.
        associative: no rate limit on matches
        timeout_seconds: stop it after this long
        isolate: writes only inside cwd (bwrap)
        cancel_on_exit: cancel it when this session (or the shell that ran it) exits
    """
    from specialists.base.errors import UserError
    from specialists.features.procs.jobs import ProcRequest, start_proc
    from specialists.features.procs.tether import process_tether, session_tether

    if not command.strip():
        raise UserError("argument 'command' must be a non-empty string")
    request = ProcRequest(
        command=command,
        cwd=cwd,
        name=name,
        watch=tuple(watch or ()),
        associative=associative,
        timeout_s=timeout_seconds,
        isolate=isolate,
    )
    tether = None
    if cancel_on_exit and caller.person:
        import os

        from specialists.base.owner import agent_ancestor

        # Inside an agent session: that session; at a terminal: the shell that ran this.
        tether = session_tether(None) if agent_ancestor() else process_tether(os.getppid())
    elif cancel_on_exit:
        tether = session_tether(caller.job_id)
    given = {
        "command": command, "name": name, "cwd": cwd, "watch": watch, "associative": associative,
        "timeout_seconds": timeout_seconds, "isolate": isolate, "cancel_on_exit": cancel_on_exit,
    }  # fmt: skip
    args = {k: v for k, v in given.items() if v not in (None, "", False, [])}  # as asked
    job, supervisor_pid = start_proc(
        caller.state_root,
        caller.owner,
        request,
        base_cwd=caller.cwd,
        max_jobs=caller.settings.jobs.max,
        settings=watch_settings(caller.settings),
        source=EventSource("bg_run", caller.call_id or "cli", args),
        tether=tether,
    )
    return {
        "id": job.id,
        "job_id": job.id,
        "owner": caller.owner,
        "label": job.options.label,
        "log": str(job.log_path),
        "cwd": job.options.cwd,
        "watched": bool(job.options.watch),
        "supervisor_pid": supervisor_pid,
        "cancel_on_exit": tether is not None,
    }


def _said_run(data: dict[str, Any]) -> str:
    watched = " and job_match messages for lines matching watch" if data["watched"] else ""
    return (
        f"Started background job {data['id']} ({data['label']}) in {data['cwd']}. "
        f"Log: {data['log']}. A [specialists event] job_exit message wakes you when it "
        f"ends{watched}. Do not poll or sleep: end your turn or do independent work."
    )


@dataclass(frozen=True)
class Output:
    """What bg_output read of a job's log."""

    got: OutputRead
    tail: int

    def to_dict(self) -> dict[str, Any]:
        g = self.got
        return {
            "id": g.job.id, "job_id": g.job.id, "state": g.job.state, "text": g.text,
            "next_offset": g.next_offset, "size": g.size,
        }  # fmt: skip


def output(
    caller: Caller,
    id: Annotated[JobRef, Cli(metavar="JOB")],
    /,
    *,
    tail: Annotated[int, Range(1, MAX_TAIL_LINES)] = 40,
    since: Annotated[int | None, Range(0, MAX_SINCE)] = None,
) -> Output:
    """Read a background job's output: its last `tail` lines (default 40), or from byte
    offset `since` (each read returns at most 32 KiB and the next offset to continue from;
    characters are never split). Use it when a job_exit or job_match event says there is
    more to see, not to wait for a job: do not poll.

    Args:
        id: The job id bg_run returned (a unique prefix works).
        tail: last N lines
        since: from this byte offset instead
    """
    from specialists.features.procs.jobs import read_output

    owner = None if caller.person else caller.owner
    return Output(read_output(caller.jobs(), owner, id, tail=tail, since=since), tail)


def _said_output(out: Output) -> str:
    g, j = out.got, out.got.job
    if g.since is None:
        where = f"its last {out.tail} lines"
    else:
        where = f"bytes {g.since}-{g.next_offset} of {g.size}"
        if g.next_offset < g.size:
            where += " (more follows)"
    head = (
        f"job {j.id} ({j.options.label}) {j.state} after {j.took()}; {g.size} bytes of "
        f"output; {where}; next since: {g.next_offset}"
    )
    return f"{head}\n---\n{g.text}" if g.text else f"{head}\n(nothing)"


@dataclass(frozen=True)
class Cancelled:
    outcomes: list[ProcCancel]
    one: bool  # one job was named

    def to_dict(self) -> dict[str, Any]:
        rows = [{"id": o.job.id, "asked": o.asked, "state": o.job.state} for o in self.outcomes]
        if not self.one:
            return {"cancelled": rows}
        o = self.outcomes[0]
        return {"job_id": o.job.id, "state": o.job.state, "asked": o.asked, "cancelled": rows}


def cancel(
    caller: Caller, id: Annotated[JobRef | None, Cli(metavar="JOB")] = None, /, *, all: bool = False
) -> Cancelled:
    """Cancel one of your background jobs by id, or all of them with all: true: SIGTERM to
    its process group, then SIGKILL 3 s later if anything lingers. Returns at once; the
    job_exit event follows. Cancelling a job that already ended, or twice, changes nothing
    and says so.

    Args:
        id: The job id bg_run returned (a unique prefix works).
        all: every running job of the owner
    """
    from specialists.base.errors import UserError
    from specialists.features.procs.jobs import cancel_all, cancel_proc

    if all == (id is not None):
        raise UserError("give a job id or --all", hint="see: specialists bg cancel --help")
    store = caller.jobs()
    if all:
        return Cancelled(cancel_all(store, caller.owner), one=False)
    owner = None if caller.person else caller.owner
    return Cancelled([cancel_proc(store, owner, id or "")], one=True)


def _said_cancel(done: Cancelled) -> str:
    if not done.outcomes:
        return "No background jobs of yours are running."
    return "\n".join(o.describe() for o in done.outcomes)


def listing(caller: Caller, *, all: Annotated[bool, Cli(only=True)] = False) -> dict[str, Any]:
    """List your background jobs: running ones first, then the latest finished ones, with
    state (running, exited N, cancelled, timeout, error), run time and command.

    Args:
        all: every owner's
    """
    from specialists.features.procs.jobs import list_jobs

    owner = None if all else caller.owner
    jobs = list_jobs(caller.jobs(), owner)
    return {"owner": owner, "jobs": [job_row(j) for j in jobs]}


def job_row(j: ProcJob) -> dict[str, Any]:
    return {
        "id": j.id,
        "state": j.state,
        "name": j.options.name,
        "command": j.options.command[:200],
        "cwd": j.options.cwd,
        "started_at_ms": j.status.started_at_ms,
        "pid": j.status.pid,
        "log": str(j.log_path),
        "owner": j.options.owner,
        "took": j.took(),
        "label": j.options.label,
        "active": j.active,
    }


def jobs_table(data: dict[str, Any]) -> str:
    jobs = data["jobs"]
    if not jobs:
        return "No background jobs."
    running = sum(1 for j in jobs if j["active"])
    width = max(len(j["state"]) for j in jobs)
    lines = [f"{len(jobs)} background job(s), {running} running:"]
    lines += [f"{j['id']}  {j['state']:<{width}}  {j['took']:>8}  {j['label']}" for j in jobs]
    return "\n".join(lines)


_GUIDANCE = (
    "Run slow commands (builds, tests, servers) with bg_run, then end your turn or do "
    "independent work; the job_exit event brings the result. Never poll bg_output in a loop."
)
BG = Noun(
    "bg",
    "run, read, cancel and list background commands",
    (
        Op(run, "run", tool="bg_run", power="command", text=_said_run, owner=True,
           help="start a shell command in the background", guidance=_GUIDANCE),
        Op(output, "output", tool="bg_output", power="command", text=_said_output, reads=True,
           help="a background job's output"),
        Op(cancel, "cancel", tool="bg_cancel", power="command", text=_said_cancel, owner=True,
           help="cancel a background job (or --all of yours)"),
        Op(listing, "list", tool="bg_list", power="command", text=jobs_table, reads=True,
           owner=True, help="your background jobs"),
    ),
)  # fmt: skip
