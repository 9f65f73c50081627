"""The CLI's command table and its one-line error text, shared by main.py and parser.py
(standard library only: the hooks' fast path loads it)."""

from __future__ import annotations

# Command -> the module (cli/cmd_<module>.py) that registers it (one module may add several),
# or, for a noun of the operations table, that holds its renderers (None: it has none).
COMMANDS: dict[str, str | None] = {
    "init": "init",
    "list": "list",
    "show": "show",
    "run": "run",
    "status": "status",
    "result": "result",
    "feed": "feed",
    "stop": "control",
    "steer": "control",
    "follow-up": "control",
    "resume": "resume",
    "clean": "gc",
    "gc": "gc",
    "top": "top",
    "web": "web",
    "doctor": "doctor",
    "mcp": "mcp",
    "hook": "hook",
    "install": "install",
    "uninstall": "install",
    "sidecar": "sidecar",
    "bg": "bg",
    "threads": "threads",
    "sandboxes": "sandboxes",
    "worktree": "worktree",
    "claims": "claims",
    "merge": "merge",
    "events": "events",
    "timer": "timer",
    "schedule": "schedule",
    "scheduler": "scheduler",
    "agents": "agents",
    "asks": "asks",
    "reply": "asks",
    "interrupt": "control",
    "wait": "control",
    "children": "control",
    "mission": "mission",
    "workflow": "workflow",
    "completion": "completion",
}

# How `specialists --help` groups the commands, in this order (a test keeps every command in
# exactly one group).
GROUPS = (
    ("Start and follow jobs", ("init", "list", "show", "run", "status", "result", "feed")),
    ("Steer running jobs", ("steer", "follow-up", "interrupt", "stop", "resume", "wait")),
    ("Never block", ("bg", "timer", "events")),
    ("Orchestrate", ("workflow", "mission", "schedule", "scheduler", "asks", "reply")),
    ("Threads and worktrees", ("children", "threads", "sandboxes", "merge", "worktree", "claims")),
    ("Watch", ("top", "web")),
    ("Set up", ("doctor", "agents", "install", "uninstall", "completion", "clean", "gc")),
    ("For agents and integrations", ("mcp", "hook", "sidecar")),
)

# Commands after which the person is not told of their pending events (cli/tell.py): they
# show the inbox themselves, own the terminal, or speak a protocol on stdout.
QUIET_AFTER = frozenset({"events", "hook", "mcp", "sidecar", "top", "web", "scheduler"})

# `specialists hook <event>`: the Claude Code hooks, with their help lines.
HOOK_EVENTS = {
    "user-prompt-submit": "this session's events with the next prompt (UserPromptSubmit)",
    "session-start": "active jobs and available specialists (SessionStart)",
    "pre-tool-use": "the bash guard and default timeout for Bash calls (PreToolUse)",
    "post-tool-use": "events mid-turn and the oversized-result guard (PostToolUse)",
    "stop": "wake the session with its next event while its work is pending (Stop)",
}

MAX_ERROR_CHARS = 2000


def error_text(text: str) -> str:
    """An error message as one line safe for a terminal: it may quote user or agent input."""
    from specialists.base.display import display_line

    return display_line(text, MAX_ERROR_CHARS)
