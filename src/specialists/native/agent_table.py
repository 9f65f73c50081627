"""The agent tool table: every tool a job's model may be offered, registered by the features
(`register_tools`, at boot), and the shared system prompt section (R-G1).

Features name their tools ("module:ATTRIBUTE" of a `Noun` of the operations table, whose ops
with a `power` become tools here); they are imported when the table is first read (`TOOLS`),
so a process that never offers a tool never loads them.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specialists.base.vocab import NODE_COPY_ENV, PERMISSION_TIERS
from specialists.events.owners import owner_job_id
from specialists.native.tool_tiers import FAIL_CLOSED_TIER, allowed, job_tier, refusal

if TYPE_CHECKING:  # the table is read rarely; registering must cost no import
    from collections.abc import Callable

    from specialists.base.ops import Noun, Op
    from specialists.native.agent_tools import AgentTool, Reply, ToolCall

GUIDANCE_HEADER = "## Working without blocking (specialists)"
GUIDANCE_CORE = (
    "Never wait on slow work: dispatch it and yield. Never poll or sleep in a loop. Results "
    "arrive later as [specialists event] messages. Do not fabricate the results of work you "
    "started and have not seen."
)

_REFS: list[str] = []  # "package.module:ATTRIBUTE" of each registered Noun


def register_tools(ref: str) -> None:
    """Add a feature's tools (the Noun `ref` names) to the table."""
    if ref not in _REFS:
        _REFS.append(ref)
        globals().pop("TOOLS", None)  # read again, with these


def _table() -> tuple[AgentTool, ...]:
    table = globals().get("TOOLS")
    if table is None:
        loaded: list[AgentTool] = []
        for ref in _REFS:
            module, _, attribute = ref.partition(":")
            loaded.extend(op_tools(getattr(importlib.import_module(module), attribute)))
        table = globals()["TOOLS"] = tuple(loaded)
    return table


def op_tools(noun: Noun) -> list[AgentTool]:
    """The agent tools of a noun: its one tool (by action) and its ops' own tools, where a
    job's model may call them (`power` is set)."""
    from specialists.base.ops import op_schema, tool_schema
    from specialists.native.agent_tools import AgentTool

    tools = []
    if noun.tool and noun.power is not None:
        tools.append(
            AgentTool(noun.tool, noun.about, tool_schema(noun), _by_action(noun), noun.guidance)
        )
    tools.extend(
        AgentTool(op.tool, op.description, op_schema(op), _runs(op), op.guidance, op.scope)
        for op in noun.ops
        if op.tool and op.power is not None
    )
    return tools


def _runs(op: Op) -> Callable[[ToolCall], Reply]:
    def handle(call: ToolCall) -> Reply:
        return reply_of(op, call, call.args)  # the model knows which tool it called

    return handle


def _by_action(noun: Noun) -> Callable[[ToolCall], Reply]:
    from specialists.base.ops import pick

    def handle(call: ToolCall) -> Reply:
        op, values = pick(noun, call.args)
        return reply_of(op, call, values)

    return handle


def reply_of(op: Op, call: ToolCall, values: Mapping[str, Any]) -> Reply:
    """Run an op for a tool call: checked arguments in, the model's text and the data out."""
    from specialists.base.ops import as_data, call_json, said
    from specialists.native.agent_tools import Reply

    caller = call.caller.replace(call_id=call.call_id) if call.call_id else call.caller
    result = call_json(op, caller, values, name=None)
    return Reply(said(op, result), as_data(result), yields=op.yields)


def __getattr__(name: str) -> Any:
    if name == "TOOLS":
        return _table()
    raise AttributeError(name)


def tool_named(name: str) -> AgentTool | None:
    return next((t for t in _table() if t.name == name), None)


def offered(
    *,
    thread: bool,
    job: bool = True,
    tier: str | None = None,
    env: Mapping[str, str] = os.environ,
) -> tuple[AgentTool, ...]:
    """The tools a caller gets: child-scoped ones (report_to_parent, close_thread) only when
    it is a thread, i.e. its job record has a `thread` (not a `parent_id`, which a continued
    job has too; a root session's children have a thread but no parent job); job-scoped ones
    (contact_supervisor) only when it is one of our jobs; only those its permission `tier`
    grants (tool_tiers.py; None: not a job, every tool). None on a Ray node that works in
    a copy: every tool here keeps its state in the job's store, which is not on that node."""
    if env.get(NODE_COPY_ENV):
        return ()
    return tuple(
        t
        for t in _table()
        if (t.scope == "any" or (t.scope == "child" and thread) or (t.scope == "job" and job))
        and allowed(t.name, tier)
    )


def offered_to(
    state_root: Path, owner: str, env: Mapping[str, str] = os.environ
) -> tuple[AgentTool, ...]:
    """The tools of the caller `owner` (a job's `job-<id>`, or an outside session's key), from
    its job's record: a thread's tools if it is one, its tier's tools, the least when the
    record cannot be read. What the MCP server and the pi sidecar list."""
    job_id = owner_job_id(owner)
    if job_id is None:
        return offered(thread=False, job=False, env=env)
    from specialists.base.errors import SpecialistsError
    from specialists.store.jobs import JobStore

    try:
        record = JobStore(state_root, news=None).read_record(job_id)
        thread, tier = bool(record.thread), record.permission
    except (SpecialistsError, OSError, ValueError, KeyError):
        thread, tier = False, FAIL_CLOSED_TIER  # no readable record: a root job, the least
    if tier not in PERMISSION_TIERS:
        tier = FAIL_CLOSED_TIER
    return offered(thread=thread, job=True, tier=tier, env=env)


def tier_refusal(name: str, state_root: Path, owner: str) -> str | None:
    """Why a job may not use the table's tool `name` (its tier does not grant it), or None:
    the line a front gives for a tool it did not offer for that reason."""
    job_id = owner_job_id(owner)
    if tool_named(name) is None or job_id is None:
        return None
    tier = job_tier(state_root, job_id)
    return None if allowed(name, tier) else refusal(name, tier)


def prompt_guidance(tools: tuple[AgentTool, ...] | None = None) -> str:
    """One system-prompt section: the core rules plus each offered tool's own line."""
    lines = [GUIDANCE_HEADER, GUIDANCE_CORE]
    lines += [f"- {t.guidance}" for t in (_table() if tools is None else tools) if t.guidance]
    return "\n".join(lines)
