"""bg_run, bg_output, bg_cancel, bg_list (seed 001 section 5.1) on the procs room.

The caller's owner (Caller.owner) owns every job it starts: its job_exit and job_match
events go to that inbox, and bg_output, bg_cancel and bg_list see only its own jobs. The
core (procs/jobs.py) is imported when a tool is called, not when the table is read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from specialists.base.errors import UserError
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
from specialists.native.agent_tools import (
    AgentTool,
    Reply,
    ToolCall,
    arg_bool,
    arg_number,
    arg_str,
    check_known,
)
from specialists.native.tool_settings import Settings

if TYPE_CHECKING:
    from specialists.features.procs.jobs import ProcJob

RUN_ARGS = {"command", "name", "cwd", "watch", "associative", "timeout_seconds", "isolate"}
RUN_ARGS |= {"cancel_on_exit"}


def watch_settings(settings: Settings) -> WatchSettings:
    j = settings.jobs
    return WatchSettings(
        tail_lines=j.tail_lines,
        debounce_ms=j.watch_debounce_ms,
        batch_lines=j.watch_batch_lines,
        per_min=j.watch_events_per_min,
        event_max_chars=settings.events.max_chars,
    )


def _store(call: ToolCall) -> Any:
    from specialists.features.procs.jobs import proc_store

    return proc_store(call.caller.state_root)


def bg_run(call: ToolCall) -> Reply:
    from specialists.features.procs.jobs import ProcRequest, start_proc
    from specialists.features.procs.tether import session_tether

    a, c = call.args, call.caller
    check_known(a, RUN_ARGS)
    timeout = arg_number(a, "timeout_seconds", low=1, high=MAX_TIMEOUT_S, required=False)
    watch = a.get("watch")
    if watch is not None and not isinstance(watch, list):
        raise UserError("argument 'watch' must be a list of regex strings")
    request = ProcRequest(
        command=arg_str(a, "command", max_len=MAX_COMMAND_CHARS),
        cwd=arg_str(a, "cwd", required=False, max_len=4096) or None,
        name=arg_str(a, "name", required=False, max_len=MAX_NAME_CHARS),
        watch=tuple(watch or ()),
        associative=arg_bool(a, "associative"),
        timeout_s=timeout,
        isolate=arg_bool(a, "isolate"),
    )
    tether = session_tether(c.job_id) if arg_bool(a, "cancel_on_exit") else None
    job, supervisor_pid = start_proc(
        c.state_root,
        c.owner,
        request,
        base_cwd=c.cwd,
        max_jobs=c.settings.jobs.max,
        settings=watch_settings(c.settings),
        source=EventSource("bg_run", call.call_id, dict(a)),
        tether=tether,
    )
    watched = " and job_match messages for lines matching watch" if job.options.watch else ""
    return Reply(
        f"Started background job {job.id} ({job.options.label}) in {job.options.cwd}. "
        f"Log: {job.log_path}. A [specialists event] job_exit message wakes you when it "
        f"ends{watched}. Do not poll or sleep: end your turn or do independent work.",
        {
            "job_id": job.id,
            "log": str(job.log_path),
            "cwd": job.options.cwd,
            "supervisor_pid": supervisor_pid,
            "cancel_on_exit": tether is not None,
        },
    )


def bg_output(call: ToolCall) -> Reply:
    from specialists.features.procs.jobs import read_output

    a = call.args
    check_known(a, {"id", "tail", "since"})
    got = read_output(
        _store(call),
        call.caller.owner,
        arg_str(a, "id", max_len=64),
        tail=a.get("tail", 40),
        since=a.get("since"),
    )
    j = got.job
    if got.since is None:
        where = f"its last {a.get('tail', 40)} lines"
    else:
        where = f"bytes {got.since}-{got.next_offset} of {got.size}"
        if got.next_offset < got.size:
            where += " (more follows)"
    head = (
        f"job {j.id} ({j.options.label}) {j.state} after {j.took()}; {got.size} bytes of "
        f"output; {where}; next since: {got.next_offset}"
    )
    return Reply(
        f"{head}\n---\n{got.text}" if got.text else f"{head}\n(nothing)",
        {"job_id": j.id, "state": j.state, "next_offset": got.next_offset, "size": got.size},
    )


def bg_cancel(call: ToolCall) -> Reply:
    from specialists.features.procs.jobs import cancel_all, cancel_proc

    a, store, owner = call.args, _store(call), call.caller.owner
    check_known(a, {"id", "all"})
    if arg_bool(a, "all"):
        if "id" in a:
            raise UserError("give either id or all, not both")
        outcomes = cancel_all(store, owner)
        if not outcomes:
            return Reply("No background jobs of yours are running.", {"cancelled": []})
        return Reply(
            "\n".join(o.describe() for o in outcomes),
            {"cancelled": [o.job.id for o in outcomes if o.asked]},
        )
    if "id" not in a:
        raise UserError("give the id of a job, or all: true")
    outcome = cancel_proc(store, owner, arg_str(a, "id", max_len=64))
    return Reply(
        outcome.describe(),
        {"job_id": outcome.job.id, "state": outcome.job.state, "asked": outcome.asked},
    )


def bg_list(call: ToolCall) -> Reply:
    from specialists.features.procs.jobs import list_jobs

    check_known(call.args, set())
    jobs = list_jobs(_store(call), call.caller.owner)
    return Reply(jobs_table(jobs), {"jobs": [job_row(j) for j in jobs]})


def jobs_table(jobs: list[ProcJob]) -> str:
    if not jobs:
        return "No background jobs."
    running = sum(1 for j in jobs if j.active)
    rows = [(j.id, j.state, j.took(), j.options.label) for j in jobs]
    width = max(len(r[1]) for r in rows)
    lines = [f"{len(jobs)} background job(s), {running} running:"]
    lines += [f"{i}  {s:<{width}}  {t:>8}  {what}" for i, s, t, what in rows]
    return "\n".join(lines)


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
    }


_ID = {"type": "string", "description": "The job id bg_run returned (a unique prefix works)."}

BG_TOOLS = (
    AgentTool(
        "bg_run",
        "Dispatch a shell command (sh -c) to run in the background; returns at once with its "
        "job id and log path, never waiting for output. A [specialists event] job_exit "
        "message wakes you when it ends (status, exit code, duration, last lines, log path); "
        "lines matching `watch` regexes arrive as job_match messages (batched, rate limited; "
        "associative: true delivers every batch). Do not poll, do not sleep: end your turn or "
        "do independent work. Use it for builds, test suites, servers, downloads. The job "
        "outlives your session unless cancel_on_exit: true (use that for servers you need "
        "only while you work). timeout_seconds stops it; isolate: true allows writes only "
        "inside cwd (bubblewrap).",
        {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "Shell command for sh -c."},
                "name": {"type": "string", "maxLength": MAX_NAME_CHARS},
                "cwd": {"type": "string", "description": "Directory (default: yours)."},
                "watch": {
                    "type": "array",
                    "items": {"type": "string", "maxLength": MAX_PATTERN_CHARS},
                    "maxItems": MAX_PATTERNS,
                    "description": "Regexes; matching lines wake you as job_match events.",
                },
                "associative": {"type": "boolean"},
                "timeout_seconds": {"type": "number", "minimum": 1, "maximum": MAX_TIMEOUT_S},
                "isolate": {"type": "boolean"},
                "cancel_on_exit": {"type": "boolean"},
            },
            "required": ["command"],
            "additionalProperties": False,
        },
        bg_run,
        guidance=(
            "Run slow commands (builds, tests, servers) with bg_run, then end your turn or do "
            "independent work; the job_exit event brings the result. Never poll bg_output in "
            "a loop."
        ),
    ),
    AgentTool(
        "bg_output",
        "Read a background job's output: its last `tail` lines (default 40), or from byte "
        "offset `since` (each read returns at most 32 KiB and the next offset to continue "
        "from; characters are never split). Use it when a job_exit or job_match event says "
        "there is more to see, not to wait for a job: do not poll.",
        {
            "type": "object",
            "properties": {
                "id": _ID,
                "tail": {"type": "integer", "minimum": 1, "maximum": MAX_TAIL_LINES},
                "since": {"type": "integer", "minimum": 0, "maximum": MAX_SINCE},
            },
            "required": ["id"],
            "additionalProperties": False,
        },
        bg_output,
    ),
    AgentTool(
        "bg_cancel",
        "Cancel one of your background jobs by id, or all of them with all: true: SIGTERM to "
        "its process group, then SIGKILL 3 s later if anything lingers. Returns at once; the "
        "job_exit event follows. Cancelling a job that already ended, or twice, changes "
        "nothing and says so.",
        {
            "type": "object",
            "properties": {"id": _ID, "all": {"type": "boolean"}},
            "additionalProperties": False,
        },
        bg_cancel,
    ),
    AgentTool(
        "bg_list",
        "List your background jobs: running ones first, then the latest finished ones, with "
        "state (running, exited N, cancelled, timeout, error), run time and command.",
        {"type": "object", "properties": {}, "additionalProperties": False},
        bg_list,
    ),
)
