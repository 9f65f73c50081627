"""Permission tiers -> each agent's own controls. Pure tables; docs/runners.md explains them.

Tiers, least to most trusted: READ_ONLY, BASH_ONLY, LOW, MEDIUM, HIGH (see vocab.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from specialists.base.errors import UserError
from specialists.base.vocab import PERMISSION_TIERS

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


@dataclass(frozen=True)
class ClaudeControls:
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


def pi_tools(tier: str) -> str:
    return PI_TOOLS[check_tier(tier)]


def claude_controls(tier: str, *, as_root: bool = False) -> ClaudeControls:
    controls = CLAUDE_CONTROLS[check_tier(tier)]
    if as_root and controls.permission_mode == "bypassPermissions":
        return CLAUDE_HIGH_AS_ROOT
    return controls


def codex_sandbox(tier: str) -> str:
    return CODEX_SANDBOX[check_tier(tier)]
