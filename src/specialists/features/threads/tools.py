"""spawn_thread, report_to_parent, close_thread, send_message_to_child, squash_sandbox and
assess_coverage (seed 001 sections 1.4, 5.5, 5.6) on the threads room.

Every handler reads the caller's real position from the records (never from the caller's
word) and checks its arguments exactly before anything is written.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from specialists.base.errors import UserError
from specialists.native.agent_tools import (
    AgentTool,
    Handler,
    Reply,
    ToolCall,
    arg_bool,
    arg_str,
    check_known,
)

MAX_INSTRUCTIONS = 100_000
MAX_MESSAGE = 100_000
_REPORT_KEYS = {"report", "structured"}


def _store_errors(handler: Handler) -> Handler:
    """A file the threads room could not write (a full disk, a damaged directory) is one
    clear error for the model, never a traceback through the front."""

    @functools.wraps(handler)
    def run(call: ToolCall) -> Reply:
        try:
            return handler(call)
        except OSError as exc:
            from specialists.store.files import unwritten

            raise unwritten(handler.__name__, exc) from None

    return run


def _now_ms(call: ToolCall) -> int:
    return int(call.caller.clock() * 1000)


def _backend(call: ToolCall) -> Any:
    from specialists.features.threads.sandboxing import backend_for

    return backend_for(call.caller.state_root.parent)


def _position(call: ToolCall) -> Any:
    from specialists.features.threads.state import position_of

    c = call.caller
    return position_of(c.state_root, c.owner, c.job_id)


def _ids(args: Mapping[str, Any], key: str, *, required: bool) -> tuple[str, ...]:
    value = args.get(key)
    if value is None and not required:
        return ()
    if type(value) is not list or not all(type(v) is str and v for v in value):
        raise UserError(f"argument {key!r} must be an array of non-empty strings")
    if len(value) > 64:
        raise UserError(f"argument {key!r} has {len(value)} entries; at most 64")
    return tuple(value)


def _opt_name(args: Mapping[str, Any], key: str) -> str | None:
    return arg_str(args, key, required=False, max_len=200) or None


@_store_errors
def spawn_thread(call: ToolCall) -> Reply:
    from specialists.features.spend.approval import check_burst
    from specialists.features.threads.spawn import SpawnRequest
    from specialists.features.threads.spawn import spawn_thread as spawn

    a = call.args
    check_known(
        a,
        {"instructions", "child_of", "fresh_context", "model", "runner", "specialist"}
        | {"sandbox", "depends_on"},
    )
    request = SpawnRequest(
        instructions=arg_str(a, "instructions", max_len=MAX_INSTRUCTIONS),
        child_of=_ids(a, "child_of", required=True),
        fresh_context=arg_bool(a, "fresh_context") if a.get("fresh_context") is not None else False,
        model=_opt_name(a, "model"),
        runner=_opt_name(a, "runner"),
        specialist=_opt_name(a, "specialist"),
        sandbox=arg_bool(a, "sandbox") if a.get("sandbox") is not None else False,
        depends_on=_ids(a, "depends_on", required=False),
        call_id=call.call_id,
    )
    c = call.caller
    spawned = spawn(
        c.state_root,
        c.owner,
        c.job_id,
        c.cwd,
        request,
        sandboxes=_backend(call),  # cheap until used: no git runs without a sandbox
        now_ms=_now_ms(call),
        limits=c.settings.threads,
        approve=lambda parent, earlier, agent: check_burst(
            c.state_root, parent, earlier, agent, cancelled=c.cancelled
        ),
    )
    t = spawned.thread
    data: dict[str, Any] = {"thread_id": t.id, "job_id": t.job_id, "stack": list(t.stack)}
    if spawned.sandbox is not None:
        data |= {"sandbox": str(spawned.sandbox.path), "branch": spawned.sandbox.branch}
    return Reply(spawned.describe(), data)


@_store_errors
def report_to_parent(call: ToolCall) -> Reply:
    from specialists.features.threads.closing import report

    check_known(call.args, _REPORT_KEYS)
    event = report(call.caller.state_root, _position(call), call.args, _now_ms(call))
    return Reply(f"Report delivered to your parent ({event}).", {"event_id": event})


@_store_errors
def close_thread(call: ToolCall) -> Reply:
    from specialists.features.threads.closing import close

    check_known(call.args, _REPORT_KEYS)
    position = _position(call)
    first = close(call.caller.state_root, position, call.args, _now_ms(call))
    said = "Closing" if first else "This thread was already closing; nothing changed. Closing"
    return Reply(
        f"{said}: your parent receives child_closed with your report when your job ends "
        "(sandbox changes are committed then). Stop now: end your turn without another call.",
        {"thread_id": position.thread_id, "terminate": True},
        yields=True,
    )


@_store_errors
def send_message_to_child(call: ToolCall) -> Reply:
    from specialists.features.threads.parent import MessageMode, send_message

    check_known(call.args, {"thread_id", "message", "mode"})
    raw = call.args.get("mode") or "steer"
    if raw not in ("steer", "follow_up"):
        raise UserError("argument 'mode' must be 'steer' or 'follow_up'")
    mode: MessageMode = "steer" if raw == "steer" else "follow_up"
    c, thread_id = call.caller, arg_str(call.args, "thread_id", max_len=64)
    message = arg_str(call.args, "message", max_len=MAX_MESSAGE)
    request_id = send_message(c.state_root, c.owner, thread_id, message, mode)
    return Reply(
        f"Message sent to thread {thread_id} as a {mode} (request {request_id}); its answer "
        "arrives as a child_report or child_closed event.",
        {"thread_id": thread_id, "request_id": request_id},
    )


@_store_errors
def squash_sandbox(call: ToolCall) -> Reply:
    from specialists.features.threads.parent import squash_child

    check_known(call.args, {"thread_id", "commit", "confirm"})
    c = call.caller
    commit = call.args.get("commit")
    outcome = squash_child(
        c.state_root,
        c.owner,
        c.job_id,
        c.cwd,
        arg_str(call.args, "thread_id", max_len=64),
        sandboxes=_backend(call),
        commit=True if commit is None else arg_bool(call.args, "commit"),
        confirm=arg_bool(call.args, "confirm"),
    )
    data: dict[str, Any] = {"outcome": outcome.kind}
    if outcome.kind == "squashed":
        data |= {"mode": outcome.mode, "commit": outcome.commit, "files": list(outcome.files)}
        return Reply(outcome.describe(), data)
    data["paths"] = list(outcome.paths)
    if outcome.kind == "refused":
        data["reason"] = outcome.reason
    return Reply(f"error: {outcome.describe()}", data, is_error=True)


def assess_coverage(call: ToolCall) -> Reply:
    from specialists.features.threads.coverage import assess_coverage as assess
    from specialists.features.threads.coverage import render_assessment

    check_known(call.args, {"assigned", "reports"})
    result = assess(call.args.get("assigned"), call.args.get("reports"))
    return Reply(
        render_assessment(result),
        {
            "missing": [[s.source, s.start_line, s.end_line] for s in result.missing],
            "assigned_lines": result.assigned_lines,
            "read_lines": result.read_lines,
        },
    )


_IDS = {"type": "array", "items": {"type": "string"}}
_STRUCTURED = {
    "type": "object",
    "description": "summary (required), files, tests, blockers (string arrays), evidence "
    "[{source, start_line, end_line, claim}], coverage [{source, start_line, end_line, "
    "status: read|partial|failed}]; line ranges inclusive, 1-based",
}
_REPORT_SCHEMA = {
    "type": "object",
    "properties": {"report": {"type": "string"}, "structured": _STRUCTURED},
    "additionalProperties": False,
}
_SPAN = {
    "type": "object",
    "properties": {
        "source": {"type": "string"},
        "start_line": {"type": "integer"},
        "end_line": {"type": "integer"},
    },
}

THREAD_TOOLS = (
    AgentTool(
        "spawn_thread",
        "Start a child thread (a job of its own) on a bounded part of your task; returns its id "
        "at once. child_of must be your own stack (root alone in the main session). Reports "
        "arrive as child_report events, its end as one child_closed. fresh_context: true gives "
        "the child only your instructions: prefer it for independent work, and make them "
        "self-contained. sandbox: true runs it in its own git worktree; merge with "
        "squash_sandbox. depends_on: direct children that must have closed successfully. For "
        "large inputs: inspect and search first, give each child exact files and line ranges, "
        "ask for evidence and coverage, check gaps with assess_coverage; a closed child is not "
        "proof of complete coverage.",
        {
            "type": "object",
            "properties": {
                "instructions": {"type": "string"},
                "child_of": _IDS,
                "fresh_context": {"type": "boolean"},
                "model": {"type": "string"},
                "runner": {"type": "string"},
                "specialist": {"type": "string"},
                "sandbox": {"type": "boolean"},
                "depends_on": _IDS,
            },
            "required": ["instructions", "child_of"],
            "additionalProperties": False,
        },
        spawn_thread,
        guidance=(
            "Split independent work into fresh-context threads (spawn_thread) and yield; record "
            "what was inspected, skipped and unresolved, and reconcile with assess_coverage."
        ),
    ),
    AgentTool(
        "report_to_parent",
        "Send your parent a progress or partial report without stopping: report (text) or "
        "structured {summary, files?, tests?, blockers?, evidence?, coverage?}, never both. "
        "Evidence and coverage are your claims with inclusive line ranges; be exact.",
        _REPORT_SCHEMA,
        report_to_parent,
        scope="child",
    ),
    AgentTool(
        "close_thread",
        "Finish this thread with your final report (report or structured, as report_to_parent; "
        "optional). Your parent receives child_closed with it when your job ends, with the "
        "sandbox's diff stat if you have one. Call it once, then stop.",
        _REPORT_SCHEMA,
        close_thread,
        scope="child",
    ),
    AgentTool(
        "send_message_to_child",
        "Send a message to one of your own running child threads (mode steer: as soon as it "
        "can take it, the default; follow_up: after its current run). A child that is closing "
        "or closed cannot receive messages: spawn a new thread instead.",
        {
            "type": "object",
            "properties": {
                "thread_id": {"type": "string"},
                "message": {"type": "string"},
                "mode": {"type": "string", "enum": ["steer", "follow_up"]},
            },
            "required": ["thread_id", "message"],
            "additionalProperties": False,
        },
        send_message_to_child,
    ),
    AgentTool(
        "squash_sandbox",
        "Merge a closed child's sandbox branch into your working copy as one squash. Into your "
        "own sandbox it is committed (commit: false leaves it staged). Into the user's working "
        "copy it is only staged, and needs confirm: true, which you may pass only after asking "
        "the user and getting their yes. Refused while the child runs or finalizes, when your "
        "tree has uncommitted changes, or when files would be overwritten; a conflict changes "
        "nothing and names the paths.",
        {
            "type": "object",
            "properties": {
                "thread_id": {"type": "string"},
                "commit": {"type": "boolean"},
                "confirm": {"type": "boolean"},
            },
            "required": ["thread_id"],
            "additionalProperties": False,
        },
        squash_sandbox,
    ),
    AgentTool(
        "assess_coverage",
        "Compare the line ranges you assigned with the coverage your children reported: "
        "returns the missing ranges, failed and partial portions and evidence, in input order. "
        "Deterministic; reads no source and verifies nothing (coverage is not correctness). "
        "assigned: [{source, start_line, end_line}]; reports: structured reports (with "
        "coverage and evidence arrays).",
        {
            "type": "object",
            "properties": {
                "assigned": {"type": "array", "items": _SPAN},
                "reports": {"type": "array", "items": {"type": "object"}},
            },
            "required": ["assigned", "reports"],
            "additionalProperties": False,
        },
        assess_coverage,
    ),
)
