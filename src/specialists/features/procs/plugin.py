"""What background commands add to a job's life: its one job_exit (R-J4)."""

from __future__ import annotations

from specialists.base.lazy import Lazy
from specialists.base.ops import register_noun
from specialists.base.vocab import PROC_RUNNER
from specialists.native.agent_table import register_tools
from specialists.runners.registry import register_runner
from specialists.store.news import NEWS
from specialists.supervise.hooks import HOOKS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from specialists.supervise.hooks import JobEnd


def register() -> None:
    register_noun("bg", "specialists.features.procs.verbs:BG")
    register_tools("specialists.features.procs.verbs:BG")
    # A proc job whose end recovery wrote: its job_exit, told like its supervisor would have.
    NEWS.posters.append(Lazy("specialists.features.procs.exit:post_if_recovered"))

    register_runner(PROC_RUNNER, "specialists.features.procs.runner", "ProcRunner")
    HOOKS.before_end.append(_job_exit)


def _job_exit(ending: JobEnd) -> None:
    if ending.record.runner != PROC_RUNNER:
        return
    from specialists.features.procs.exit import post_job_exit

    post_job_exit(ending.store, ending.record, ending.status, ending.final, ending.error)
