"""The agent tool table as native tools (the native front of native/agent_table.py).

Each `AgentTool` becomes a native `Tool` with the same name, description and JSON schema;
its handler runs through `toolset.call_tool` with the job's `Caller` (owner `job-<id>`), so
a sleep sets a timer in the job's own inbox directory and its event wakes this very job. A
user error (a bad argument, a cap reached) is an error result the model reads; a reply that
yields ends the run once the turn's calls are done (the loop's rule, R-T1).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from specialists.native.agent_tools import AgentTool, ToolCall, call_tool
from specialists.native.tools.base import Tool, ToolContext, ToolFailure, ToolFn, ToolOutput


def table_tools(tools: Iterable[AgentTool]) -> dict[str, Tool]:
    """`tools` (toolset.registry.offered: child-scoped ones only for thread jobs) as native
    tools."""
    return {t.name: Tool(t.name, t.description, t.schema, _adapt(t)) for t in tools}


def _adapt(tool: AgentTool) -> ToolFn:
    def run(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        if ctx.caller is None:
            raise ToolFailure(f"{tool.name} is not available here: this run has no event owner")
        caller = ctx.caller.replace(cancelled=ctx.cancel.is_set)  # an abort ends a wait
        reply = call_tool(tool, ToolCall(args, caller, call_id=ctx.call_id))
        return ToolOutput(reply.text, is_error=reply.is_error, yields=reply.yields)

    return run
