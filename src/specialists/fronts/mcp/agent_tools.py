"""The agent tool table over MCP, and `events`: how a client without hooks collects its events.

Every tool of toolset.registry.TOOLS (sleep, sleep_until, sleep_until_event, timer_cancel;
bg_* and the thread tools as their rooms add them) is served through one adapter,
`run_agent_tool`, for the client's owner (ServerContext.keys(): a Claude Code session's key
when the client is Claude Code). The table's handlers check their own arguments.

An MCP tool cannot end its client's turn, so a yielding tool's result says to end the turn
and that the wake-up will come as an event: Claude Code's hooks deliver it (the Stop hook
waits for it); any other client calls `events`, which waits at most EVENTS_MAX_WAIT_S (firing
due timers meanwhile) and returns what arrived. Its reply is the delivery: the events are
acknowledged once the reply is built (at-least-once up to that point: a failure before it, or
a cancelled call, leaves them pending for the next call or another front).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specialists.base.errors import UserError
from specialists.fronts.mcp.handlers import ServerContext
from specialists.native import agent_table as registry
from specialists.native.agent_tools import AgentTool, Caller, ToolCall, arg_number, check_known
from specialists.native.agent_tools import call_tool as call_agent_tool

EVENTS_MAX_WAIT_S = 60.0
EVENTS_DEFAULT_WAIT_S = 30.0
EVENTS_MAX = 50
EVENTS_MAX_CHARS = 40_000  # a reply the model reads; a body is at most ~4,400 characters
YIELD_NOTE = (
    " An MCP tool cannot end your turn: end it now. The wake-up arrives as a [specialists "
    "event] message (with hooks, as Claude Code has, by itself; otherwise call events)."
)
EVENTS_DESCRIPTION = (
    "Collect your [specialists event] messages: jobs you started that ended, timers you set "
    "that fired, background commands that exited or printed a watched line. Returns at once "
    "when events are waiting, else waits up to wait_s seconds (default 30, at most 60) for "
    "the next one, firing due timers meanwhile; each event is returned once. For clients "
    "without hooks (Claude Code's hooks deliver events by themselves). When it returns "
    "nothing and work is still pending, call it again or do other work; never poll status "
    "in a loop instead."
)
EVENTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "wait_s": {"type": "number", "minimum": 0, "maximum": EVENTS_MAX_WAIT_S},
        "max": {"type": "integer", "minimum": 1, "maximum": EVENTS_MAX},
    },
    "additionalProperties": False,
}
ANY_RESULT: dict[str, Any] = {"type": "object"}  # the table's replies carry tool-specific data


def offered_tools(ctx: ServerContext) -> tuple[AgentTool, ...]:
    """The table's tools for this client ("child" ones only to a thread job's agent, and
    only what a job's permission tier grants: toolset/tiers.py)."""
    return registry.offered_to(ctx.store().root, ctx.keys()[0])


class ClientCaller(Caller):
    """An MCP client: the job ops start jobs in the server's project, and the synchronous
    ones among the server's own jobs (fronts/dispatch.py)."""

    __slots__ = ("front",)

    def __init__(self, *args: Any, front: ServerContext | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.front = front


def caller(ctx: ServerContext) -> Caller:
    from specialists.catalog.config import unreported
    from specialists.native.tool_settings import load_settings

    settings, warnings, problem = load_settings(ctx.root())
    ctx.warnings.extend(unreported([*warnings, *([problem] if problem else [])]))
    keys = ctx.keys()
    job = keys[0][4:] if keys[0].startswith("job-") else None
    cwd = ctx.root()
    if ctx.job_scope is not None:  # the job's agent works in the job's directory (a sandbox)
        cwd = Path(ctx.store().read_record(ctx.job_scope).cwd)
    return ClientCaller(
        ctx.store().root, keys[0], cwd, job_id=job, settings=settings, keys=keys,
        warnings=ctx.warnings, front=ctx,
    )  # fmt: skip


def run_agent_tool(
    tool: AgentTool,
    ctx: ServerContext,
    args: Mapping[str, Any],
    call_id: str,
    cancelled: threading.Event | None = None,
) -> tuple[dict[str, Any], str, bool]:
    """(structured data, text, is_error) of one table tool call. `cancelled` is set when the
    client cancels the call (notifications/cancelled): a waiting tool (an ask) ends then."""
    who = caller(ctx)
    if cancelled is not None:
        from specialists.features.asks.ops import MCP_CANCELLED

        who = who.replace(cancelled=cancelled.is_set, cancel_why=MCP_CANCELLED)
    reply = call_agent_tool(tool, ToolCall(args, who, call_id=call_id))
    if reply.is_error:
        return dict(reply.data), reply.text, True
    data = dict(reply.data)
    if reply.yields:
        data["yields"] = True
        return data, reply.text + YIELD_NOTE, False
    return data, reply.text, False


def collect_events(
    ctx: ServerContext, args: Mapping[str, Any], cancelled: threading.Event | None = None
) -> tuple[dict[str, Any], str]:
    """The `events` tool: (structured data, text)."""
    from specialists.events.multi import OwnerSet
    from specialists.events.render import render_event
    from specialists.events.wake import wait_for_any

    check_known(args, {"wait_s", "max"})
    wait_s = arg_number(args, "wait_s", low=0, high=EVENTS_MAX_WAIT_S, required=False)
    limit = arg_number(args, "max", low=1, high=EVENTS_MAX, required=False)
    owners = OwnerSet(ctx.store().root, ctx.keys())
    started = time.monotonic()
    stop = cancelled.is_set if cancelled is not None else None
    wait_for_any(owners, EVENTS_DEFAULT_WAIT_S if wait_s is None else wait_s, until=stop)
    if cancelled is not None and cancelled.is_set():
        raise UserError("events: the call was cancelled; nothing was taken")
    with owners.taking(max_events=int(limit or 10), max_chars=EVENTS_MAX_CHARS) as taken:
        events = [
            {"id": e.id, "kind": e.kind, "tool": e.source.tool, "call_id": e.source.call_id,
             "text": render_event(e)}
            for e in taken.events
        ]  # fmt: skip
        data: dict[str, Any] = {
            "events": events,
            "more": taken.more,
            "waited_s": round(time.monotonic() - started, 1),
        }
        if taken.problems:
            data["problems"] = [p[:300] for p in taken.problems[:5]]
        taken.commit()
    if events:
        text = "\n\n".join(e["text"] for e in events)
        return data, text + (
            "\n\n(more events are waiting: call events again)" if taken.more else ""
        )
    pending = _pending(ctx)
    data["pending"] = pending
    said = f"still pending: {pending}" if pending else "nothing is pending"
    return data, f"No events after {data['waited_s']:g} s; {said}."


def _pending(ctx: ServerContext) -> str:
    """What this client still waits for: its active jobs and pending timers."""
    from specialists.events.notices import job_owner
    from specialists.events.timers import TimerStore
    from specialists.store.view import all_statuses

    store, keys = ctx.store(), set(ctx.keys())
    statuses, _ = all_statuses(store)
    jobs = sum(
        1
        for st in statuses
        if st.status in ("starting", "running") and keys & set(job_owner(store.job_dir(st.id)))
    )
    timers = sum(len(TimerStore(store.root, key).pending()) for key in keys)
    parts = [f"{jobs} job(s)" if jobs else "", f"{timers} timer(s)" if timers else ""]
    return ", ".join(p for p in parts if p)
