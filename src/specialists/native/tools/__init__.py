"""The native tool set: read, write, edit, bash, grep, find, ls, chosen by permission tier.

`execute` is the only entry the loop uses: it never raises for a tool's own failure (bad
arguments, missing file, unknown tool): those come back as error results the model reads
(P11), and oversized output from any tool but read is spilled (P8).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from specialists.events.spill import SpillLimits, bound_body
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
UNGUARDED = frozenset({"read"})  # bounded by itself; reading a spill file must not re-spill


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
    output = _run(call, tools, ctx)
    text = output.text
    if call.name not in UNGUARDED:
        text = bound_body(text, ctx.spill_dir, f"{call.name}-{call.id}", limits)
    return ToolResult(call.id, call.name, text, is_error=output.is_error)


def _run(call: ToolCall, tools: Mapping[str, Tool], ctx: ToolContext) -> ToolOutput:
    if call.arguments_error is not None:
        return ToolOutput(f"invalid arguments for {call.name}: {call.arguments_error}", True)
    tool = tools.get(call.name)
    if tool is None:
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
