"""The words every room shares: permission tiers, runner names, thinking levels, file suffixes.

A leaf module (standard library only), so the catalog, the store, the runners and the
interfaces can all import it without importing each other.
"""

from __future__ import annotations

# Permission tiers, least to most trusted. Each runner maps these onto its agent's controls.
PERMISSION_TIERS = ("READ_ONLY", "BASH_ONLY", "LOW", "MEDIUM", "HIGH")
DEFAULT_PERMISSION = "MEDIUM"
# What each tier grants beyond reading, as powers: `command` (a shell of its own on the host),
# `write` (files changed in the working tree), `full` (the agent's own checks off). Tiers are
# not a line: BASH_ONLY has a shell and no file tools, LOW file tools and no shell (Claude
# Code's LOW has no Bash). Agent tools (native/tool_tiers.py) and a thread child's tier (never
# more than its parent's: `narrower_tier`) are decided from these.
TIER_POWERS: dict[str, frozenset[str]] = {
    "READ_ONLY": frozenset(),
    "BASH_ONLY": frozenset({"command"}),
    "LOW": frozenset({"write"}),
    "MEDIUM": frozenset({"command", "write"}),
    "HIGH": frozenset({"command", "write", "full"}),
}

# Runner names, in the order help texts list them. The classes live in runners/registry.py.
# These are the runners a person (`--runner`), a definition or config.toml may pick.
RUNNER_NAMES = ("pi", "claude", "codex", "command", "native", "external-job")
# Background commands (procs/): a job of this runner is started only by bg_run or
# `specialists bg run`, which give it what no specialist has (the command, watch patterns,
# the owner to wake). Never pickable: `run --runner proc` would hand a prompt to `sh -c`.
PROC_RUNNER = "proc"
# A workflow run (workflows/): started only by `specialists workflow run`, the MCP workflow
# tool or a schedule; its agent is our engine. Never pickable either.
WORKFLOW_RUNNER = "workflow"
# Set for an agent on a Ray node that works in a copy (workspace "bundle"): the job's store is
# on the supervisor's machine, so no agent tool that keeps state there is offered.
NODE_COPY_ENV = "SPECIALISTS_NODE_COPY"
RUNNER_ALIASES = {  # other tools' names
    "external-cli": "command",
    "external_cli": "command",
    "external_job": "external-job",
}
DEFAULT_RUNNER = "pi"
# A runner option a thread's spawn sets (threads/forks.py): the job's first run forks its
# resume_session (claude --fork-session, codex exec fork) instead of continuing it.
FORK_SESSION_OPTION = "fork_session"

# Reasoning effort, as pi names it; other runners map or ignore it.
THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")

# Specialist definition files (Markdown agent files are recognised by their directory).
SPEC_SUFFIXES = (".specialist.yaml", ".specialist.yml", ".specialist.json")


def narrower_tier(a: str, b: str) -> str:
    """The most trusted tier that grants nothing outside `a` or `b` (an unknown tier grants
    nothing): READ_ONLY for BASH_ONLY and LOW, which each grant what the other does not."""
    shared = TIER_POWERS.get(a, frozenset()) & TIER_POWERS.get(b, frozenset())
    fits = [t for t in PERMISSION_TIERS if TIER_POWERS[t] <= shared]
    return max(fits, key=lambda t: len(TIER_POWERS[t]))


def split_model(model: str) -> tuple[str | None, str]:
    """ "provider/model" -> (provider, model) at the first "/"; a bare name -> (None, name).

    The one reading of a model name: pi takes the two parts as --provider and --model, the
    native runtime requires a provider, Claude Code and Codex take the name as written.
    """
    provider, sep, name = model.partition("/")
    if sep and provider and name:
        return provider, name
    return None, model
