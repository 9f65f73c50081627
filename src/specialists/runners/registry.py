"""Runner names -> runner classes, imported only when a job needs them."""

from __future__ import annotations

import importlib

from specialists.errors import UserError
from specialists.runners.base import Runner
from specialists.vocab import DEFAULT_RUNNER

__all__ = ["DEFAULT_RUNNER", "RUNNERS", "check_runner_name", "make_runner"]

RUNNERS: dict[str, tuple[str, str]] = {
    "pi": ("specialists.runners.pi", "PiRunner"),
    "claude": ("specialists.runners.claude", "ClaudeRunner"),
    "codex": ("specialists.runners.codex", "CodexRunner"),
    "command": ("specialists.runners.command", "CommandRunner"),
    "native": ("specialists.runners.native", "NativeRunner"),
}


def check_runner_name(name: str) -> str:
    if name not in RUNNERS:
        raise UserError(f"unknown runner {name!r}", hint="choose one of: " + ", ".join(RUNNERS))
    return name


def make_runner(name: str) -> Runner:
    module_name, class_name = RUNNERS[check_runner_name(name)]
    cls = getattr(importlib.import_module(module_name), class_name)
    runner: Runner = cls()
    return runner
