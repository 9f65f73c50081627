"""The words every room shares: permission tiers, runner names, thinking levels, file suffixes.

A leaf module (standard library only), so the catalog, the store, the runners and the
interfaces can all import it without importing each other.
"""

from __future__ import annotations

# Permission tiers, least to most trusted. Each runner maps these onto its agent's controls.
PERMISSION_TIERS = ("READ_ONLY", "BASH_ONLY", "LOW", "MEDIUM", "HIGH")
DEFAULT_PERMISSION = "MEDIUM"

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


def split_model(model: str) -> tuple[str | None, str]:
    """ "provider/model" -> (provider, model) at the first "/"; a bare name -> (None, name).

    The one reading of a model name: pi takes the two parts as --provider and --model, the
    native runtime requires a provider, Claude Code and Codex take the name as written.
    """
    provider, sep, name = model.partition("/")
    if sep and provider and name:
        return provider, name
    return None, model
