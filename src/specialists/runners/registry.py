"""Runner names -> runner classes, imported only when a job needs them."""

from __future__ import annotations

import importlib

from specialists.errors import UserError
from specialists.runners.base import AgentRunner
from specialists.vocab import DEFAULT_RUNNER, PROC_RUNNER, WORKFLOW_RUNNER

__all__ = ["DEFAULT_RUNNER", "RUNNER_CLASSES", "known_runner", "make_runner"]

RUNNER_CLASSES: dict[str, tuple[str, str]] = {
    "pi": ("specialists.runners.pi", "PiRunner"),
    "claude": ("specialists.runners.claude", "ClaudeRunner"),
    "codex": ("specialists.runners.codex", "CodexRunner"),
    "command": ("specialists.runners.command", "CommandRunner"),
    "native": ("specialists.runners.native", "NativeRunner"),
    "external-job": ("specialists.runners.external_job", "ExternalJobRunner"),
    PROC_RUNNER: ("specialists.runners.proc", "ProcRunner"),
    WORKFLOW_RUNNER: ("specialists.runners.workflow", "WorkflowRunner"),
}


def known_runner(name: str) -> str:
    """`name` if a person or a definition may pick it, else a UserError listing those."""
    if name == PROC_RUNNER:
        raise UserError(
            f"the {PROC_RUNNER} runner cannot be picked; it runs background commands",
            hint="start one with `specialists bg run` or the bg_run tool",
        )
    if name == WORKFLOW_RUNNER:
        raise UserError(
            f"the {WORKFLOW_RUNNER} runner cannot be picked; it runs workflows",
            hint="start one with `specialists workflow run`",
        )
    if name not in RUNNER_CLASSES:
        pickable = [n for n in RUNNER_CLASSES if n not in (PROC_RUNNER, WORKFLOW_RUNNER)]
        raise UserError(f"unknown runner {name!r}", hint="choose one of: " + ", ".join(pickable))
    return name


def make_runner(name: str) -> AgentRunner:
    """The runner of a job (any runner a job.json may name, `proc` included)."""
    if name not in RUNNER_CLASSES:
        known_runner(name)  # raises the error that lists the choices
    module_name, class_name = RUNNER_CLASSES[name]
    cls = getattr(importlib.import_module(module_name), class_name)
    runner: AgentRunner = cls()
    return runner
