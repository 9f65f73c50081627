"""Permission tiers -> each agent's own controls. Pure tables; docs/runners.md explains them.

Tiers, least to most trusted: READ_ONLY, BASH_ONLY, LOW, MEDIUM, HIGH (see vocab.py). A
definition's tool allowlist (catalog/tools.py) narrows what the tier grants on every runner:
pi's `--tools`, Claude Code's `--tools`/`--allowedTools`, the native tool set. A tool the
runner cannot give (Claude Code's WebFetch on pi, any list without bash on Codex, whose only
way to read is its shell) is refused before the job is created (`check_runner_tools`).
"""

from __future__ import annotations

from collections.abc import Sequence

from specialists.base.errors import UserError
from specialists.base.tuples import NamedTuple
from specialists.base.vocab import PERMISSION_TIERS
from specialists.catalog.tools import CLAUDE_ONLY, PI_NAMES, TABLE_TOOLS

# --- pi: the `--tools` list ------------------------------------------------------------

_PI_ALL = "read,bash,edit,write,grep,find,ls"
PI_TOOLS: dict[str, str] = {
    "READ_ONLY": "read,bash,grep,find,ls",
    "BASH_ONLY": "bash",
    "LOW": _PI_ALL,
    "MEDIUM": _PI_ALL,
    "HIGH": _PI_ALL,
}

# --- Claude Code: available tools, auto-approved tools, permission mode -----------------


class ClaudeControls(NamedTuple):
    """Flags for `claude -p`.

    `tools` is the built-in tool set the model sees at all (`--tools`; None keeps Claude's
    default set). `allowed` run without asking (`--allowedTools`); in `-p` mode nobody can
    answer a permission prompt, so any other tool use is denied and reported to the model.
    """

    tools: tuple[str, ...] | None
    allowed: tuple[str, ...]
    disallowed: tuple[str, ...]
    permission_mode: str


_READ = ("Read", "Grep", "Glob")
_EDIT = ("Edit", "Write")
_NO_EDIT = ("Edit", "Write", "NotebookEdit")

CLAUDE_CONTROLS: dict[str, ClaudeControls] = {
    "READ_ONLY": ClaudeControls((*_READ, "Bash"), (*_READ, "Bash"), _NO_EDIT, "default"),
    "BASH_ONLY": ClaudeControls(("Bash",), ("Bash",), _NO_EDIT, "default"),
    "LOW": ClaudeControls((*_READ, *_EDIT), (*_READ, *_EDIT), (), "acceptEdits"),
    "MEDIUM": ClaudeControls((*_READ, *_EDIT, "Bash"), (*_READ, *_EDIT, "Bash"), (), "acceptEdits"),
    "HIGH": ClaudeControls(None, (), (), "bypassPermissions"),
}

# Claude refuses bypassPermissions as root ("cannot be used with root/sudo privileges").
# HIGH as root therefore pre-approves every common built-in tool instead.
CLAUDE_HIGH_AS_ROOT = ClaudeControls(
    None,
    (*_READ, *_EDIT, "NotebookEdit", "Bash", "WebFetch", "WebSearch", "Task"),
    (),
    "acceptEdits",
)

# --- Codex: the sandbox mode -----------------------------------------------------------

# Codex has no per-tool switch: its shell runs inside the sandbox. BASH_ONLY may write
# through the shell (as pi's bash can), so it gets workspace-write.
CODEX_SANDBOX: dict[str, str] = {
    "READ_ONLY": "read-only",
    "BASH_ONLY": "workspace-write",
    "LOW": "workspace-write",
    "MEDIUM": "workspace-write",
    "HIGH": "danger-full-access",
}


def check_tier(tier: str) -> str:
    if tier not in PERMISSION_TIERS:
        raise UserError(
            f"unknown permission tier {tier!r}",
            hint="choose one of: " + ", ".join(PERMISSION_TIERS),
        )
    return tier


def pi_tools(tier: str, allow: Sequence[str] | None = None) -> str:
    """pi's (and the native runtime's) `--tools` list: the tier's, narrowed by `allow`."""
    granted = PI_TOOLS[check_tier(tier)]
    if allow is None:
        return granted
    return ",".join(t for t in granted.split(",") if t in allow)


# catalog/tools.py canonical names -> Claude Code's tool names (it has no `ls`: Glob lists)
CLAUDE_NAMES = {
    "read": "Read",
    "grep": "Grep",
    "find": "Glob",
    "ls": "Glob",
    "bash": "Bash",
    "edit": "Edit",
    "write": "Write",
    "notebookedit": "NotebookEdit",
    "webfetch": "WebFetch",
    "websearch": "WebSearch",
    "todowrite": "TodoWrite",
    "task": "Task",
}


def claude_controls(
    tier: str, *, as_root: bool = False, allow: Sequence[str] | None = None
) -> ClaudeControls:
    controls = CLAUDE_CONTROLS[check_tier(tier)]
    if as_root and controls.permission_mode == "bypassPermissions":
        controls = CLAUDE_HIGH_AS_ROOT
    if allow is None:
        return controls
    # Each allowed tool as Claude names it; `bash(git:*)` is a rule: Bash is offered, only
    # the rule is pre-approved (in -p mode any other Bash use is denied).
    offered: list[str] = []
    approved: list[str] = []
    for tool in allow:
        base, _, rule = tool.partition("(")
        name = CLAUDE_NAMES.get(base) or (base if base in CLAUDE_ONLY else None)
        if name is None:
            continue  # a specialists tool: served by our MCP server, not a Claude built-in
        if name not in offered:
            offered.append(name)
        approved.append(f"{name}({rule}" if rule else name)
    tier_tools = controls.tools
    if tier_tools is not None:  # the tier is the floor
        offered = [n for n in offered if n in tier_tools]
        approved = [a for a in approved if a.partition("(")[0] in offered]
    if controls.permission_mode == "bypassPermissions":
        if len(approved) == len(offered) and all("(" not in a for a in approved):
            return controls._replace(tools=tuple(offered))
        # A rule means something only where tools are approved one by one.
        return ClaudeControls(tuple(offered), tuple(approved), (), "acceptEdits")
    return controls._replace(
        tools=tuple(offered),
        allowed=tuple(dict.fromkeys(approved)),
    )


def check_runner_tools(specialist: str, runner: str, allow: Sequence[str] | None) -> None:
    """Refuse, before a job is created, an allowlist naming a tool this runner cannot give."""
    if allow is None:
        return
    own = [t for t in allow if t not in TABLE_TOOLS]
    if runner == "claude":
        return  # every name catalog/tools.py knows is Claude Code's, rules included
    if runner in ("pi", "native"):
        missing = [t for t in own if t not in PI_NAMES]
        has = ", ".join(PI_NAMES)
    elif runner == "codex":
        missing = [t for t in own if t not in (*PI_NAMES, "websearch")]
        if "bash" not in own and not missing:
            raise UserError(
                f"specialist {specialist!r} allows no bash, and the codex runner reads and "
                "searches only through its shell",
                hint="add bash to its tools (the read-only sandbox still holds it), or run it "
                "on pi, claude or native",
            )
        has = "bash (its shell, inside the sandbox), edit and write (apply_patch), websearch"
    else:
        missing, has = own, "none: it runs one command"
    if missing:
        raise UserError(
            f"specialist {specialist!r} allows tools the {runner} runner does not have: "
            + ", ".join(missing),
            hint=f"the {runner} runner's tools: {has}; remove them from its tools, or run it "
            "on claude",
        )


def codex_sandbox(tier: str) -> str:
    return CODEX_SANDBOX[check_tier(tier)]
