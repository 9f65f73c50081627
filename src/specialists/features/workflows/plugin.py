"""What workflows add: the `workflow` runner, whose agent process is the workflow engine, and
the `workflow` noun (its command and its MCP tool)."""

from __future__ import annotations

from specialists.base.ops import register_noun
from specialists.base.vocab import WORKFLOW_RUNNER
from specialists.runners.registry import register_runner


def register() -> None:
    register_runner(WORKFLOW_RUNNER, "specialists.features.workflows.runner", "WorkflowRunner")
    register_noun("workflow", "specialists.features.workflows.verbs:WORKFLOW")
