"""An agent file's `tools:` list: a strict allowlist, checked by name when the file loads.

Claude Code and pi spell their tools differently (`Glob` / `find`, `MultiEdit` / `edit`); a
name is read case-insensitively and becomes one *canonical* name, the one every runner maps
to its own control (runners/tiers.py: pi `--tools`, Claude Code `--tools`/`--allowedTools`,
the Codex sandbox; native/tools). A name no agent has is refused with that name, so a typo
never runs an agent with less (or more) than the file meant. The list only narrows: what the
job's permission tier does not grant is never given, listed or not.

The specialists tools (bg_run, spawn_thread, ...) are known names too, so a file may list
them; which of them a job is offered is its permission tier's business (toolset/registry.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from specialists.base.reader import Invalid

# Canonical name -> how agent files write it (lower-cased). The first seven are pi's and the
# native runtime's own names (their `--tools` list); Claude Code's names are the others.
BUILTIN_TOOLS: dict[str, frozenset[str]] = {
    "read": frozenset({"read", "notebookread"}),
    "grep": frozenset({"grep"}),
    "find": frozenset({"find", "glob"}),
    "ls": frozenset({"ls"}),
    "bash": frozenset({"bash"}),
    "edit": frozenset({"edit", "multiedit", "apply_patch"}),
    "write": frozenset({"write"}),
    "notebookedit": frozenset({"notebookedit"}),
    "webfetch": frozenset({"webfetch"}),
    "websearch": frozenset({"websearch"}),
    "todowrite": frozenset({"todowrite", "todoread"}),
    "task": frozenset({"task", "agent"}),
}
PI_NAMES = ("read", "bash", "edit", "write", "grep", "find", "ls")  # pi's and native's order
WRITE_TOOLS = frozenset({"edit", "write", "notebookedit"})

# Claude Code's other built-in tools (2.1.197's init list), kept as written there: they exist
# only on the claude runner.
CLAUDE_ONLY = frozenset(
    {
        "BashOutput",
        "KillShell",
        "Skill",
        "SlashCommand",
        "ExitPlanMode",
        "TaskCreate",
        "TaskGet",
        "TaskList",
        "TaskOutput",
        "TaskStop",
        "TaskUpdate",
        "CronCreate",
        "CronDelete",
        "CronList",
        "EnterWorktree",
        "ExitWorktree",
        "ReportFindings",
        "ScheduleWakeup",
        "SendMessage",
        "Workflow",
    }
)
_CLAUDE_ONLY_BY_LOWER = {name.lower(): name for name in CLAUDE_ONLY}

# The specialists agent tools (native/agent_table.py TOOLS; a unit test keeps the two equal).
TABLE_TOOLS = frozenset(
    {
        *("bg_run", "bg_output", "bg_cancel", "bg_list"),
        *("sleep", "sleep_until", "sleep_until_event", "timer_cancel"),
        *("spawn_thread", "report_to_parent", "close_thread", "send_message_to_child"),
        *("squash_sandbox", "assess_coverage"),
        *("contact_supervisor", "list_asks", "reply_to_ask", "mission"),
        *("claim_files", "release_files", "list_claims", "merge_queue"),
    }
)
_MCP_PREFIX = "mcp__specialists__"  # how Claude Code names our server's tools

# `Bash(git:*)`: a Claude Code permission rule on one tool; only Claude Code can hold it.
_RULE = re.compile(r"^([A-Za-z_]+)\((.*)\)$", re.DOTALL)
_BY_WRITTEN = {w: canon for canon, written in BUILTIN_TOOLS.items() for w in written}


def canonical(name: str) -> str:
    """The canonical name of one written tool name; raises ValueError naming it if no agent
    has such a tool. A Claude Code rule keeps its rule: `Bash(git:*)` -> `bash(git:*)`."""
    text = name.strip()
    rule = _RULE.match(text)
    base = rule.group(1) if rule else text
    lower = base.lower()
    if lower in _BY_WRITTEN:
        found = _BY_WRITTEN[lower]
    elif lower in _CLAUDE_ONLY_BY_LOWER:
        found = _CLAUDE_ONLY_BY_LOWER[lower]
    elif lower.startswith(_MCP_PREFIX) and lower[len(_MCP_PREFIX) :] in TABLE_TOOLS:
        found = lower[len(_MCP_PREFIX) :]
    elif lower in TABLE_TOOLS:
        found = lower
    elif "/" in text or text.startswith(".") or text.endswith((".ts", ".js", ".mjs")):
        raise ValueError(
            f"{text!r} is a path: tools names tools; an extension is not loaded from here "
            "(pass it in execution.runner args, e.g. ['-e', PATH] for pi)"
        )
    else:
        raise ValueError(f"no agent has a tool named {text!r}")
    if rule is None:
        return found
    if found != "bash":
        raise ValueError(f"{text!r}: a permission rule is only understood on Bash")
    return f"bash({rule.group(2)})"


def allowlist(
    tools: Iterable[str] | None, disallowed: Iterable[str] = (), field: str = "tools"
) -> tuple[str, ...] | None:
    """The canonical allowlist of an agent file, in the order written, without repeats;
    None when the file sets no limit (no `tools`, no `disallowedTools`); () allows no agent
    tool at all. Raises Invalid naming the first unknown tool. Without `tools`,
    `disallowedTools` removes from every built-in tool; with it, from the list."""
    removed = _canonical_all(disallowed, "disallowedTools")
    if tools is None:
        if not removed:
            return None
        listed: tuple[str, ...] = tuple(BUILTIN_TOOLS)
    else:
        listed = _canonical_all(tools, field)
    gone = set(removed) | {_base(r) for r in removed}
    return tuple(dict.fromkeys(t for t in listed if t not in gone and _base(t) not in gone))


def _canonical_all(names: Iterable[str], field: str) -> tuple[str, ...]:
    out = []
    for i, name in enumerate(names):
        try:
            out.append(canonical(name))
        except ValueError as exc:
            raise Invalid(f"{field}[{i}]", str(exc)) from None
    return tuple(out)


def _base(tool: str) -> str:
    return tool.split("(", 1)[0]


def builtin_names(tools: Iterable[str]) -> set[str]:
    """The agent-tool part of an allowlist (rules as their tool), table tools left out."""
    return {_base(t) for t in tools if _base(t) in BUILTIN_TOOLS or t in CLAUDE_ONLY}
