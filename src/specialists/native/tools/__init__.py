"""The native tool set: read, write, edit, bash, grep, find, ls, chosen by permission tier,
plus the agent tool table (table.py: sleep, timers, and whatever native/agent_table.py holds).

`execute_call` is the only entry the loop uses: it never raises for a tool's own failure
(bad arguments, missing file, unknown tool): those come back as error results the model reads
(P11), and oversized output from any tool but read is spilled (P8, toolset.guards, the same
guard every front applies).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping

from specialists.events.spill import SpillLimits
from specialists.native.guards import guard_result
from specialists.native.messages import ToolCall, ToolResult
from specialists.native.model import ToolSpec
from specialists.native.tools import bash, edit, find, grep, ls, read, write
from specialists.native.tools.base import Tool, ToolContext, ToolFailure, ToolOutput

__all__ = [
    "ALL_TOOLS",
    "TIER_TOOLS",
    "Tool",
    "ToolContext",
    "ToolFailure",
    "ToolOutput",
    "execute",
    "execute_call",
    "tool_specs",
    "tools_for_permission",
]

log = logging.getLogger(__name__)

ALL_TOOLS: Mapping[str, Tool] = {
    module.__name__.rsplit(".", 1)[1]: Tool(
        module.__name__.rsplit(".", 1)[1], module.DESCRIPTION, module.PARAMETERS, module.run
    )
    for module in (read, bash, edit, write, grep, find, ls)
}

# Same table as the pi runner's --tools (seed 000, section 8.2).
_ALL = ("read", "bash", "edit", "write", "grep", "find", "ls")
TIER_TOOLS: Mapping[str, tuple[str, ...]] = {
    "READ_ONLY": ("read", "bash", "grep", "find", "ls"),
    "BASH_ONLY": ("bash",),
    "LOW": _ALL,
    "MEDIUM": _ALL,
    "HIGH": _ALL,
}


def tools_for_permission(permission: str) -> dict[str, Tool]:
    names = TIER_TOOLS.get(permission.upper())
    if names is None:
        raise ToolFailure(
            f"unknown permission tier {permission!r}; expected one of {', '.join(TIER_TOOLS)}"
        )
    return {name: ALL_TOOLS[name] for name in names}


def tool_specs(tools: Mapping[str, Tool]) -> tuple[ToolSpec, ...]:
    return tuple(ToolSpec(t.name, t.description, t.parameters) for t in tools.values())


def execute(
    call: ToolCall,
    tools: Mapping[str, Tool],
    ctx: ToolContext,
    limits: SpillLimits | None = None,
) -> ToolResult:
    return execute_call(call, tools, ctx, limits)[0]


def execute_call(
    call: ToolCall,
    tools: Mapping[str, Tool],
    ctx: ToolContext,
    limits: SpillLimits | None = None,
) -> tuple[ToolResult, bool]:
    """The call's result (bounded by the result guard, R-O1..R-O3) and whether it yields."""
    output = _run(call, tools, dataclasses.replace(ctx, call_id=call.id))
    text = output.text
    if not output.bounded:
        text = guard_result(call.name, text, ctx.spill_dir, limits=limits or ctx.result_limits)
    return ToolResult(call.id, call.name, text, is_error=output.is_error), output.yields


def _run(call: ToolCall, tools: Mapping[str, Tool], ctx: ToolContext) -> ToolOutput:
    if call.arguments_error is not None:
        return ToolOutput(f"invalid arguments for {call.name}: {call.arguments_error}", True)
    tool = tools.get(call.name)
    if tool is None:
        if ctx.caller is not None:  # a table tool this job's tier does not grant: say so
            from specialists.native.agent_table import tier_refusal

            refused = tier_refusal(call.name, ctx.caller.state_root, ctx.caller.owner)
            if refused is not None:
                return ToolOutput(refused, True)
        known = ", ".join(tools) or "none"
        return ToolOutput(f"unknown tool {call.name!r}; available tools: {known}", True)
    try:
        return tool.run(call.arguments, ctx)
    except ToolFailure as exc:
        return ToolOutput(f"{call.name}: {exc}", True)
    except (OSError, UnicodeError, ValueError, TypeError) as exc:
        # A tool bug or an odd file must not end the run: the model sees it and moves on.
        log.warning("tool %s failed on %s", call.name, dict(call.arguments), exc_info=True)
        return ToolOutput(f"{call.name} failed: {type(exc).__name__}: {exc}", True)
