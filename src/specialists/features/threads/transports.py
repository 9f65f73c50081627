"""What each runner's transport supports for a thread (seed 001 section 11: every transport
says what it can do): how the child gets the thread tools, whether a forked context can be
given to it honestly, and which messages a running child can take."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Transport:
    via: str  # how the child gets the thread tools
    tools: bool  # report_to_parent / close_thread reach it
    fork: bool  # a forked context can be given to it honestly, from a parent of its runner
    messages: frozenset[str]  # the send_message_to_child modes its runner takes
    no_fork: str = ""  # why a fork is refused, when it is


_BOTH = frozenset({"steer", "follow_up"})
TRANSPORTS: dict[str, Transport] = {
    "native": Transport("native tool table", tools=True, fork=True, messages=_BOTH),
    "pi": Transport("pi extension", tools=True, fork=True, messages=_BOTH),
    # One-shot CLIs: a message can only start the next run of a keep-alive job.
    "claude": Transport(
        "MCP server (specialists mcp --job)", True, fork=True, messages=frozenset({"follow_up"})
    ),
    # `codex exec fork` forks the live session when the child starts: no honest snapshot.
    "codex": Transport(
        "MCP server (specialists mcp --job)",
        True,
        fork=False,
        messages=frozenset({"follow_up"}),
        no_fork="codex exec fork forks the live session when the child starts, not the "
        "conversation as it is at the spawn",
    ),
    "command": Transport(
        "none (its final output is its close)", False, False, frozenset(), "it has no session"
    ),
}
UNKNOWN = Transport("unknown runner", False, False, frozenset(), "an unknown runner")


def transport(runner: str) -> Transport:
    return TRANSPORTS.get(runner, UNKNOWN)


def supports(runner: str) -> str:
    t = transport(runner)
    can = [name for name, ok in (("tools", t.tools), ("fork", t.fork)) if ok]
    can += [f"{m} messages" for m in sorted(t.messages)]
    return f"{t.via}: " + (", ".join(can) if can else "reports by final text only")


def front_options(runner: str, options: dict[str, object]) -> dict[str, object]:
    """The runner options that give a child its thread tools through its runner's front.
    pi: our extension (`-e`, runners/pi.py's `specialists_extension`); claude and codex:
    `specialists mcp --job <id>` among their MCP servers (runners/job_mcp.py); native serves
    the table itself; command has no tools."""
    if runner == "pi":
        return {**options, "specialists_extension": True}
    if runner in ("claude", "codex"):
        return {**options, "specialists_mcp": True}  # runners/job_mcp.py
    return options
