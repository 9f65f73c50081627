"""Runner names -> runner classes, imported only when a job needs them; and the executors
that run a job's agent elsewhere (a Ray node), registered by the rooms that provide them."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from specialists.base.errors import UserError
from specialists.base.vocab import DEFAULT_RUNNER, PROC_RUNNER, WORKFLOW_RUNNER

if TYPE_CHECKING:
    from specialists.runners.base import AgentRunner

__all__ = [
    "DEFAULT_RUNNER",
    "EXECUTORS",
    "RUNNER_CLASSES",
    "job_runner",
    "known_runner",
    "make_runner",
    "register_runner",
]

RUNNER_CLASSES: dict[str, tuple[str, str]] = {
    "pi": ("specialists.runners.pi", "PiRunner"),
    "claude": ("specialists.runners.claude", "ClaudeRunner"),
    "codex": ("specialists.runners.codex", "CodexRunner"),
    "command": ("specialists.runners.command", "CommandRunner"),
    "native": ("specialists.runners.native", "NativeRunner"),
    "external-job": ("specialists.runners.external_job", "ExternalJobRunner"),
}
# Runners a feature adds (proc, workflow): a job may name them, a person may not pick them.
UNPICKABLE = {PROC_RUNNER, WORKFLOW_RUNNER}
# Executor kind -> (runner name, job.json's executor settings) -> the job's runner there.
EXECUTORS: dict[str, Callable[[str, Mapping[str, Any]], AgentRunner]] = {}


def register_runner(name: str, module: str, cls: str) -> None:
    RUNNER_CLASSES[name] = (module, cls)


def job_runner(runner: str, executor: Mapping[str, Any] | None) -> AgentRunner:
    """The runner a job's supervisor drives: the job's own runner, here or where its
    executor (job.json's settings; {} or None: this machine) runs it."""
    kind = (executor or {}).get("kind", "local")
    if kind == "local":
        return make_runner(runner)  # looked up now: tests replace it
    make = EXECUTORS.get(kind)
    if make is None:
        raise UserError(f"unknown executor {str(kind)[:40]!r}", hint="local or ray")
    assert executor is not None
    return make(runner, executor)


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
        pickable = [n for n in RUNNER_CLASSES if n not in UNPICKABLE]
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
