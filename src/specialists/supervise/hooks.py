"""What features add to a job's life: the hooks they register, and nothing else.

The supervisor and the planner never import a feature. Each feature registers here, once per
process, when the composition root loads the features (`specialists.features.load`):

    HOOKS.planning      record fields a feature resolves at plan time (executor, attention)
    HOOKS.prompt_source a prompt a feature supplies (a bead run as the prompt)
    HOOKS.after_plan    a last look at the planned record (beads track a run)
    HOOKS.housekeeping  run-start chores (gc'd jobs' beads, stale notices), warnings back
    HOOKS.clean         what `specialists clean` removes beside old jobs (closed missions):
                        (lines said, warnings) back
    HOOKS.gate          the verdict of a command run after the job (gates)
    HOOKS.settle        after the post-scripts, beside them (the job's bead updated)
    HOOKS.finalize      once the agent is dead, what may still change how the job ends (a
                        `--sandbox` job's work committed, or `done` becomes `error`)
    HOOKS.before_end    what must be settled once the job ended (its open asks, its file
                        claims, a merge queue's resolver); before its end is told
    HOOKS.ended         the job's end rendered for its owners (a proc's job_exit, a thread
                        parent's child_closed): the events the one teller (supervise/news.py)
                        appends, from its supervisor's end and from crash recovery alike
    HOOKS.heard         what follows a job's news once its status is written and its owners
                        told (its end, or a keep-alive answer): a goal mission's next step
    HOOKS.paused        the job paused (interrupted; `final` is "interrupted"): what waits on
                        its turn ends (open asks)
    HOOKS.answered      a keep-alive job answered and waits (`final` is "waiting"): a
                        checkpoint commit of its sandbox (auto_commit: checkpoint_on_waiting)
    HOOKS.companions    something a feature runs beside a job (attention and the watchdog)
    HOOKS.pauses        what may pause a job instead of failing it, and hold its start (a
                        usage limit until its reset: features/usage_limits): one `Pauser`
                        per job, made from its supervisor

Registering costs no import of the feature (`Lazy("module:attribute")` imports at the first
call), and this module stays light (no dataclasses): a reader that boots to recover a job
pays little. A hook is called with plain data and may not raise into the supervisor: what
fails is reported on the job (`JobEnd.report`) and the job still ends.
"""

from __future__ import annotations

__all__ = ["HOOKS", "Companion", "CompanionContext", "Hooks", "JobEnd", "Pauser", "Planning"]

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from specialists.base.tuples import NamedTuple
from specialists.store.jobs import JobStore
from specialists.store.records import JobRecord, JobStatus

TYPE_CHECKING = False
if TYPE_CHECKING:
    from specialists.events.told import Told
    from specialists.runners.base import SpendLimit
    from specialists.supervise.supervisor import Supervisor


class JobEnd(NamedTuple):
    """A job's end, as the hooks see it: the final state is decided, not yet written."""

    store: JobStore
    record: JobRecord
    status: JobStatus  # what will be written (`status.status` is the final state)
    final: str
    error: str | None
    answer: str | None  # the job's last good answer
    answers: int  # how many answers it gave (a keep-alive job's count)
    now_ms: int
    event: Callable[..., None]  # append an event to the job's log
    report: Callable[[str], None]  # a problem, said once on the job
    recovered: bool = False  # written by crash recovery, not by its supervisor


class Planning(NamedTuple):
    """What the planner knows when it asks the features for their fields."""

    request: Any  # supervise.plan.JobRequest
    spec: Any  # catalog.model.Specialist
    config: Mapping[str, Any]  # config.toml's tables, merged
    cwd: Path


class Companion(Protocol):
    """Something a feature runs beside a job, on the supervisor's events and clock."""

    def began(self) -> None:
        """Before the agent starts."""

    def saw(self, event: Any, now: float) -> bool:
        """One runner event; True when the status changed."""

    def tick(self, running: bool) -> bool:
        """Each loop step; True when the status changed."""

    def turn_ended(self) -> None:
        """At a safe end of a turn."""

    def use_status(self, status: JobStatus) -> None:
        """The status object the job writes from now on (a takeover replaces it)."""


class Pauser(Protocol):
    """What a feature does to pause a job instead of failing it, on its supervisor's calls.
    It acts through the supervisor it was made from (its `pause`, `finish`, control inbox)."""

    def hold(self) -> bool:
        """Before the agent starts: wait while its start is held; False when the job ended."""

    def run_failed(self, error: str) -> bool:
        """A run failed with `error`: True when the job was paused instead."""

    def resumed(self) -> None:
        """The paused job runs again (at its wake-up, or earlier by a person)."""

    def ended(self) -> None:
        """The job ends (maybe while paused: nothing is to wake it)."""

    def take_over(self) -> str | None:
        """This supervisor took over the job paused with no agent running: wait out the
        pause; the task the agent continues with, or None when the job ended meanwhile."""


class CompanionContext(NamedTuple):
    store: JobStore
    record: JobRecord
    status: JobStatus
    clock: Callable[[], float]
    wall: Callable[[], float]
    event: Callable[..., None]
    stop: Callable[[str], None]  # end the job with this error, as a stop ends it
    spend: SpendLimit  # what the runner is told the job may still spend (set in `began`)


class Hooks:
    """The hook lists (see the module docstring); plain lists, appended to at boot."""

    def __init__(self) -> None:
        self.planning: list[Callable[[Planning], Mapping[str, Any]]] = []
        self.prompt_source: list[Callable[[Planning, str], tuple[str, str | None] | None]] = []
        self.after_plan: list[Callable[[JobRecord, Planning, list[str]], JobRecord]] = []
        self.housekeeping: list[Callable[[JobStore, list[str]], list[str]]] = []
        self.clean: list[Callable[[Path], tuple[list[str], list[str]]]] = []
        self.gate: list[Callable[[JobEnd], tuple[str, str | None] | None]] = []
        self.settle: list[Callable[[JobEnd], None]] = []
        self.finalize: list[Callable[[JobEnd], tuple[str, str | None] | None]] = []
        self.before_end: list[Callable[[JobEnd], None]] = []
        self.ended: list[Callable[[JobEnd], Iterable[Told]]] = []
        self.heard: list[Callable[[JobEnd], None]] = []
        self.paused: list[Callable[[JobEnd], None]] = []
        self.answered: list[Callable[[JobEnd], None]] = []
        self.companions: list[Callable[[CompanionContext], Companion | None]] = []
        self.pauses: list[Callable[[Supervisor], Pauser | None]] = []


HOOKS = Hooks()
