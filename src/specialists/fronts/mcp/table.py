"""The tool table: name, description, schemas and handler of every MCP tool, and `call_tool`.

Descriptions are part of the product: the orchestrating model reads them to decide how to
delegate. Each says to dispatch, keep working and not poll in a loop, in under 900
characters (a test holds that line).

Every model request carries the schemas of the tools it is offered, so the table has a small
core (`core=True`: dispatch, read, control) and the rest. `specialists mcp --tools core`
serves the core, `--tools more` the rest, the default all of them (docs/mcp.md, "Tool
sets"). Core tools are marked `_meta["anthropic/alwaysLoad"]`: Claude Code, which defers MCP
tools behind its tool search, offers them from the first request. Deprecated aliases are
listed nowhere; the default set still answers them for configurations written before.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from specialists.base import ops
from specialists.base.display import one_line
from specialists.base.errors import Bug, Failed, SpecialistsError, UserError
from specialists.base.ops import Noun, Op
from specialists.base.reader.arguments import check_arguments
from specialists.fronts.dispatch import JOBS
from specialists.fronts.mcp import agent_tools as a
from specialists.fronts.mcp import handlers as h
from specialists.native import agent_table as registry
from specialists.native.agent_tools import AgentTool
from specialists.project import boot
from specialists.supervise.verbs import STOP

log = logging.getLogger("specialists.fronts.mcp")
boot()  # the features add their agent tools and nouns: the table holds every one

MAX_DESCRIPTION = 900


@dataclass(frozen=True)
class McpTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    handler: Callable[[h.ServerContext, dict[str, Any]], dict[str, Any]]
    read_only: bool = False
    deprecated: bool = False
    agent_tool: AgentTool | None = None  # a tool of the agent tool table (agent_tools.py)
    # The model must read the text (a yield's "end your turn", an event): Claude Code shows a
    # result's structuredContent instead of its text when there is one, so such a tool has no
    # output schema and its data travels in `_meta` under DATA_META.
    text_first: bool = False
    core: bool = False  # in the always-offered set (see the module docstring)

    @property
    def served_output_schema(self) -> dict[str, Any] | None:
        if self.text_first:
            return None
        # Claude Code shows the model a result's structuredContent instead of its text, so
        # a success's guidance and warnings travel in the data too (call_tool).
        properties = {**self.output_schema.get("properties", {}), **GUIDANCE_PROPERTIES}
        return {**self.output_schema, "properties": properties}

    def wire(self, always_load: bool) -> dict[str, Any]:
        """The tool as tools/list names it (MCP's spelling)."""
        tool: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "annotations": {
                "readOnlyHint": self.read_only,
                "destructiveHint": False,
                "openWorldHint": False,
            },
        }
        if self.served_output_schema is not None:
            tool["outputSchema"] = self.served_output_schema
        if always_load:
            tool["_meta"] = {ALWAYS_LOAD_META: True}
        return tool


@dataclass(frozen=True)
class ToolOutcome:
    """A tool's answer. A success carries `data` as structuredContent (it matches the tool's
    output schema). An error carries only its one text line: the SDKs' clients check any
    structuredContent of an error against the output schema too (the TypeScript one does),
    and an error's fields cannot match an answer's schema. Its details (job_id, status) go
    in `_meta` under ERROR_META, which no client validates."""

    data: dict[str, Any]
    text: str  # the text content block: what most clients show the model
    is_error: bool = False


ERROR_META = "specialists/error"
DATA_META = "specialists/data"
ALWAYS_LOAD_META = "anthropic/alwaysLoad"  # Claude Code: offer this tool without a search
GUIDANCE_PROPERTIES: dict[str, Any] = {
    "note": {"type": "string"},
    "warnings": {"type": "array", "items": {"type": "string"}},
}
TOOLSETS = ("all", "core", "more")
RUN_NOTE = "Keep working; you are told when the job ends; then call result once."


class UnknownTool(UserError):
    """A tool name this server does not have (a protocol error, not a tool result)."""


_STOP_OLD = "DEPRECATED: use stop. Stops a job (graceful abort, then terminate): it ends cancelled."
DEPRECATED = frozenset({"start_specialist", "poll_specialist", "stop_specialist", "run_parallel"})


def _runs(op: Any) -> Callable[[h.ServerContext, dict[str, Any]], dict[str, Any]]:
    from specialists.base.ops import as_data, call

    return lambda ctx, args: as_data(call(op, a.caller(ctx), args))


def _by_action(noun: Any) -> Callable[[h.ServerContext, dict[str, Any]], dict[str, Any]]:
    from specialists.base.ops import as_data, call_json, pick

    def handle(ctx: h.ServerContext, args: dict[str, Any]) -> dict[str, Any]:
        op, values = pick(noun, args)
        return as_data(call_json(op, a.caller(ctx), values, noun.tool))

    return handle


def op_tools(nouns: Iterable[Any]) -> tuple[McpTool, ...]:
    """The operations table's tools that are not agent tools (base/ops.py): a noun's one
    tool (its verbs as `action`) and ops with a tool of their own."""
    from specialists.base.opschema import signature

    made = []
    for noun in nouns:
        grouped = noun.grouped()
        if grouped and noun.power is None:
            read_only = all(o.reads for o in grouped)
            schema = ops.tool_schema(noun)
            made.append(
                McpTool(noun.tool, noun.about, schema, a.ANY_RESULT, _by_action(noun), read_only)
            )
        for op in noun.ops:
            if op.tool and op.power is None:
                sig = signature(op.fn)
                made.append(
                    McpTool(op.tool, op.description, sig.input_schema(), sig.output_schema(),
                            _runs(op), op.reads, op.tool in DEPRECATED, core=op.core)
                )  # fmt: skip
    return tuple(made)


def _unserved(ctx: h.ServerContext, args: dict[str, Any]) -> dict[str, Any]:
    raise Bug("a table tool is served by agent_tools.run_agent_tool, not a handler")


# The job tools (fronts/dispatch.py) first, as tools/list has always named them.
TOOLS: tuple[McpTool, ...] = (
    *op_tools([JOBS]),
    *op_tools([Noun("stop", "", (Op(STOP.ops[0].fn, tool="stop_specialist", about=_STOP_OLD),))]),
)

# The agent tool table (native/agent_table.py) and `events`, next to the job tools above.
TOOLS += (
    McpTool("events", a.EVENTS_DESCRIPTION, a.EVENTS_SCHEMA, a.ANY_RESULT, _unserved, True,
            text_first=True),
    *(McpTool(t.name, t.description, dict(t.schema), a.ANY_RESULT, _unserved, agent_tool=t,
              text_first=True) for t in registry.TOOLS),
)  # fmt: skip
TOOLS += op_tools(ops.nouns())
TOOLS_BY_NAME: Mapping[str, McpTool] = {t.name: t for t in TOOLS}


def served_tools(ctx: h.ServerContext) -> tuple[McpTool, ...]:
    """The tools this server answers (the table's "child" tools only to a thread job's
    agent). A job-scoped server (`--job`) serves the agent tool table alone: never the
    orchestrator's job tools, nor `events` (the job's supervisor delivers its events).
    Otherwise the server's tool set (ctx.toolset) decides; deprecated aliases are answered
    by the default set only."""
    offered = {t.name for t in a.offered_tools(ctx)}
    if ctx.job_scope is not None:
        return tuple(t for t in TOOLS if t.agent_tool is not None and t.name in offered)
    tools = (t for t in TOOLS if t.agent_tool is None or t.name in offered)
    if ctx.toolset == "core":
        return tuple(t for t in tools if t.core)
    if ctx.toolset == "more":
        return tuple(t for t in tools if not t.core and not t.deprecated)
    return tuple(tools)


def listed_tools(ctx: h.ServerContext) -> tuple[McpTool, ...]:
    """What tools/list shows: the served tools without the deprecated aliases."""
    return tuple(t for t in served_tools(ctx) if not t.deprecated)


def wire_listing(ctx: h.ServerContext) -> list[dict[str, Any]]:
    """tools/list's `tools`: core tools always loaded; a job's agent gets all of its few
    tools at once (report_to_parent must be there on its first turn)."""
    scoped = ctx.job_scope is not None
    return [t.wire(always_load=t.core or scoped) for t in listed_tools(ctx)]


def listings() -> dict[str, list[dict[str, Any]]]:
    """tools/list of a client that is none of our jobs, by tool set: what listing.json
    holds for the stdio server's start (scripts/mcp-listing writes it)."""
    ctx = h.ServerContext(owner_keys=("mcp-listing",))
    return {toolset: wire_listing(replace(ctx, toolset=toolset)) for toolset in TOOLSETS}


def _names(ctx: h.ServerContext) -> set[str]:
    return {t.name for t in served_tools(ctx)}


def call_tool(
    ctx: h.ServerContext,
    name: str,
    arguments: Mapping[str, Any] | None,
    *,
    call_id: str = "",
    cancelled: threading.Event | None = None,
) -> ToolOutcome:
    """Check the arguments, run the handler, and shape the outcome. Only UnknownTool raises."""
    spec = TOOLS_BY_NAME.get(name)
    if spec is None or name not in _names(ctx):
        if spec is not None and (spec.agent_tool is not None or ctx.job_scope is not None):
            refused = registry.tier_refusal(name, ctx.store().root, ctx.keys()[0])
            if refused is not None:  # a table tool this job's permission tier does not grant
                return failure(UserError(refused))
        raise UnknownTool(f"unknown tool {name[:60]!r}", hint="see tools/list")
    call_ctx = replace(ctx, warnings=[])  # this call's own warnings (calls run in threads)
    try:
        if spec.agent_tool is not None:  # the table's handlers check their own arguments
            data, text, is_error = a.run_agent_tool(
                spec.agent_tool, call_ctx, dict(arguments or {}), call_id, cancelled
            )
            if is_error:
                line = one_line(text.removeprefix("error: "), 2000)
                return ToolOutcome({"error": line}, f"error: {line}", is_error=True)
        elif name == "events":
            args = check_arguments(name, spec.input_schema, arguments)
            data, text = a.collect_events(call_ctx, args, cancelled)
        else:
            args = check_arguments(name, spec.input_schema, arguments)
            data = spec.handler(call_ctx, args)
            text = render(name, data)
    except SpecialistsError as exc:
        return failure(exc)
    except Exception as exc:  # the model gets one line; the trace goes to the log
        log.exception("tool %s failed", name)
        return failure(Bug(f"{name} failed: {type(exc).__name__}: {exc}"))
    warnings = [one_line(w, 300) for w in call_ctx.warnings]
    for warning in warnings:
        log.warning("tool %s: %s", name, warning)
        text += f"\nwarning: {warning}"
    if not spec.text_first:  # the data is what Claude Code shows: guidance goes there too
        data = guided(name, data, warnings)
    return ToolOutcome(data, text)


def wire_result(name: str, outcome: ToolOutcome) -> dict[str, Any]:
    """A CallToolResult in MCP's spelling: the text block, and the data as structuredContent
    (or, for an error or a text-first tool, in `_meta`: see ToolOutcome and text_first)."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": outcome.text}]}
    if outcome.is_error:
        result["isError"] = True
        result["_meta"] = {ERROR_META: outcome.data}
    elif TOOLS_BY_NAME[name].text_first:
        result["_meta"] = {DATA_META: outcome.data}
    else:
        result["structuredContent"] = outcome.data
    return result


def guided(name: str, data: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    """`data` with what the text block says beyond it: a dispatch's nudge and warnings."""
    out = dict(data)
    if name in ("run", "start_specialist"):
        out["note"] = RUN_NOTE
    if warnings:
        out["warnings"] = warnings
    return out


def failure(exc: SpecialistsError) -> ToolOutcome:
    """An error result: `error: <what> (<hint>)`, its details in data for `_meta`."""
    line = one_line(exc.one_line(), 2000)
    data = dict(exc.data) if isinstance(exc, Failed) else {}
    data["error"] = line
    return ToolOutcome(data, f"error: {line}", is_error=True)


def render(name: str, data: dict[str, Any]) -> str:
    """The text block: the answer itself for answers, a nudge for dispatches, else JSON."""
    if name in ("run", "start_specialist"):
        return (
            f"started job {data['job_id']} ({data.get('specialist', '?')}). Keep working; "
            "call result when its end is announced."
            + (f" Mission: {data['mission_id']}." if data.get("mission_id") else "")
        )
    if name in ("result", "use_specialist") and data.get("result") is not None:
        clipped = " (clipped)" if data.get("truncated") else ""
        return f"[job {data['job_id']} {data['status']}{clipped}]\n{data['result']}"
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)
