"""What background commands add to a job's life: its one job_exit (R-J4), the rendering of
the job's end (from its supervisor or from crash recovery alike)."""

from __future__ import annotations

from specialists.base.ops import register_noun
from specialists.base.vocab import PROC_RUNNER
from specialists.native.agent_table import register_tools
from specialists.runners.registry import register_runner
from specialists.supervise.hooks import HOOKS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from specialists.events.told import Told
    from specialists.supervise.hooks import JobEnd


def register() -> None:
    register_noun("bg", "specialists.features.procs.verbs:BG")
    register_tools("specialists.features.procs.verbs:BG")
    register_runner(PROC_RUNNER, "specialists.features.procs.runner", "ProcRunner")
    HOOKS.ended.append(_job_exit)


def _job_exit(ending: JobEnd) -> list[Told]:
    if ending.record.runner != PROC_RUNNER:
        return []  # the common case costs no import
    from specialists.features.procs.exit import render

    return render(ending)
