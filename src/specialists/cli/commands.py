"""The CLI's command table and its one-line error text, shared by main.py and parser.py
(standard library only: the hooks' fast path loads it)."""

from __future__ import annotations

# Command -> the module (cli/cmd_<module>.py) that registers it; one module may add several.
COMMANDS = {
    "init": "init",
    "list": "list",
    "show": "show",
    "run": "run",
    "status": "status",
    "result": "result",
    "feed": "feed",
    "stop": "stop",
    "steer": "steer",
    "follow-up": "steer",
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
}


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
    from specialists.display import display_line

    return display_line(text, MAX_ERROR_CHARS)
