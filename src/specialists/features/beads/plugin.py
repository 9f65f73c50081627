"""What beads add to a job's life: a bead as the prompt, a run tracked as a bead, the bead
updated when the job ends, and crashed jobs' beads settled at the next run's start."""

from __future__ import annotations

from specialists.base.errors import SpecialistsError
from specialists.supervise.hooks import HOOKS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from specialists.store.jobs import JobStore
    from specialists.store.records import JobRecord
    from specialists.supervise.hooks import JobEnd, Planning


def register() -> None:
    HOOKS.prompt_source.append(_prompt)
    HOOKS.after_plan.append(_track)
    HOOKS.settle.append(_finished)
    HOOKS.housekeeping.append(_crashed)


def _prompt(planning: Planning, prompt: str) -> tuple[str, str | None] | None:
    request = planning.request
    if not request.bead:
        return None  # the common case costs no import
    from specialists.features.beads.jobs import bead_prompt_for

    return bead_prompt_for(planning.cwd, request.bead, request.context_depth, prompt)


def _track(record: JobRecord, planning: Planning, warnings: list[str]) -> JobRecord:
    from specialists.features.beads.notes import bd_path

    request = planning.request
    if not request.track_bead or request.bead or bd_path() is None:
        return record  # no bd (the common case): beads' client is not even imported
    from specialists.features.beads.jobs import track

    tracked, problem = track(record, planning.spec.beads_integration)
    if problem:
        warnings.append(problem)
    return tracked


def _finished(ending: JobEnd) -> None:
    if not ending.record.bead_id:
        return
    from specialists.features.beads.jobs import on_job_finished

    try:
        on_job_finished(ending.record, ending.status, ending.final, ending.answer, ending.error)
    except SpecialistsError as exc:
        ending.event("notice", message=f"bead update failed: {exc.one_line()}")


def _crashed(store: JobStore, crashed: list[str]) -> list[str]:
    if not crashed:
        return []
    from specialists.features.beads.jobs import settle_crashed

    return settle_crashed(store, crashed)
