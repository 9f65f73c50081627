"""The CLI's command table, the read verbs' plain forms and the one-line error text, shared
by main.py and parser.py (standard library only: the hooks' fast path loads it)."""

from __future__ import annotations

import importlib
import os
from types import SimpleNamespace

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

# The read verbs a person waits on: their parser is their module's alone (no noun of the
# operations table), and the features boot only if a job's news needs them (project.py).
READS = frozenset({"status", "result", "feed"})
# The verbs with plain forms (their module's `PLAIN`): the read verbs and `run`.
PLAIN_VERBS = READS | {"run"}
# The commands that may be a noun of the operations table, whose plain forms the generated
# command line reads (generated.py) once the features have named their nouns (the parser
# boots them too).
OPS_FIRST = frozenset(COMMANDS) - PLAIN_VERBS


class Plain:
    """A verb's plain forms, read without argparse (its module's `PLAIN`): the verb first,
    then its flags (word -> dest), its options (word -> dest, each with a value neither blank
    nor dash-led nor holding a NUL) and at most one job (`job`: its dest, required unless
    `defaults` holds it), no two of `exclusive`. `defaults` gives every other dest as
    argparse would (tests/unit/test_read_path.py and test_cli_plain_run.py hold the two
    equal)."""

    __slots__ = ("defaults", "exclusive", "flags", "job", "options")

    def __init__(
        self,
        flags: dict[str, str],
        job: str,
        defaults: dict[str, object],
        exclusive: tuple[str, ...] = (),
        options: dict[str, str] | None = None,
    ) -> None:
        self.flags, self.job, self.defaults, self.exclusive = flags, job, defaults, exclusive
        self.options = options or {}


def plain_args(args: list[str]) -> SimpleNamespace | None:
    """The namespace of a verb given in a plain form (`status --json`, `result ID`, `run
    NAME --prompt TEXT`), without argparse's import and parser; None for anything else
    (`--help`, `--opt=value`, an abbreviation, any mistake), which argparse reads and
    refuses as before."""
    if not args or args[0] not in PLAIN_VERBS:
        return None
    module = importlib.import_module(f"specialists.fronts.cli.cmd_{COMMANDS[args[0]]}")
    plain: Plain = module.PLAIN
    values = {k: list(v) if isinstance(v, list) else v for k, v in plain.defaults.items()}
    values.update(command=args[0], run=module.run)
    job = None
    words = iter(args[1:])
    for word in words:
        if word in plain.flags:
            values[plain.flags[word]] = True
        elif word in plain.options:
            value = next(words, "")
            if not value.strip() or value.startswith("-") or "\x00" in value:
                return None  # argparse's `nonempty` judges it, or it is an option
            values[plain.options[word]] = value
        elif word.startswith("-") or job is not None:
            return None
        else:
            job = word
    if job is None and plain.job not in plain.defaults:
        return None
    if sum(values[dest] is True for dest in plain.exclusive) > 1:
        return None
    if job is not None:
        values[plain.job] = job
    return SimpleNamespace(**values)


# `specialists --help` (and a bare `specialists`) as the parser prints it, written down: a
# person's first command builds no parser of some 300 modules (scripts/cli-help writes it;
# tests/unit/test_cli_habits.py holds it equal to the parser's).
ROOT_HELP = os.path.join(os.path.dirname(__file__), "root_help.txt")
ROOT_HELP_FORMS: tuple[list[str], ...] = ([], ["--help"], ["-h"])


def written_root_help() -> str | None:
    """The root help as written down, or None when the file is missing or unreadable (then
    the parser prints it)."""
    try:
        with open(ROOT_HELP, encoding="utf-8") as f:
            return f.read(1 << 20)
    except (OSError, UnicodeDecodeError):
        return None


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
