"""Runner names -> runner classes, imported only when a job needs them."""

from __future__ import annotations

import importlib

from specialists.errors import UserError
from specialists.runners.base import AgentRunner
from specialists.vocab import DEFAULT_RUNNER

__all__ = ["DEFAULT_RUNNER", "RUNNER_CLASSES", "known_runner", "make_runner"]

RUNNER_CLASSES: dict[str, tuple[str, str]] = {
    "pi": ("specialists.runners.pi", "PiRunner"),
    "claude": ("specialists.runners.claude", "ClaudeRunner"),
    "codex": ("specialists.runners.codex", "CodexRunner"),
    "command": ("specialists.runners.command", "CommandRunner"),
    "native": ("specialists.runners.native", "NativeRunner"),
}


def known_runner(name: str) -> str:
    """`name` if a runner of that name exists, else a UserError listing them."""
    if name not in RUNNER_CLASSES:
        raise UserError(
            f"unknown runner {name!r}", hint="choose one of: " + ", ".join(RUNNER_CLASSES)
        )
    return name


def make_runner(name: str) -> AgentRunner:
    module_name, class_name = RUNNER_CLASSES[known_runner(name)]
    cls = getattr(importlib.import_module(module_name), class_name)
    runner: AgentRunner = cls()
    return runner
