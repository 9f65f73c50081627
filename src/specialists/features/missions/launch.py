"""What a launch does about missions (the `run` of the CLI and of MCP, a workflow launch).

As the seed has it, a mission is one per workflow launch, shared by its children: a workflow
launch creates one unless told not to (`--no-mission`, `mission: false`), and a plain run
creates none unless asked (MCP `mission: true`). `mission_id` attaches a
job to an existing mission instead, and is strict: a missing or closed mission fails before
anything starts. A continued job (`--continue JOB`, `resume`: choice "follow") joins the
mission of the job it continues. Creating an automatic mission never stops a launch: a
failure (a full disk, a damaged store) is a warning.

    choice = choose(mission_id=..., disabled=..., options=...)
    check_before_launch(state_root, choice)          # strict attach: raises UserError
    ... launch the job ...
    mission_id = link_after_launch(state_root, choice, launched, warnings)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from specialists.base.errors import SpecialistsError, UserError, reason
from specialists.features.missions import model, ops
from specialists.features.missions.model import Run
from specialists.features.missions.news import step
from specialists.features.missions.store import MissionStore

if TYPE_CHECKING:
    from specialists.store.records import JobRecord


@dataclass(frozen=True)
class MissionChoice:
    kind: Literal["auto", "attach", "follow", "none"]  # follow: only the continued job's
    mission_id: str | None = None


@dataclass(frozen=True)
class Launched:
    job_id: str
    specialist: str
    prompt: str
    owner: tuple[str, ...]
    continue_from: str | None = None

    @classmethod
    def of(cls, record: JobRecord) -> Launched:
        """The launched job as its launch record tells it (`parent_id`: the job it continues)."""
        return cls(
            record.id, record.specialist, record.prompt, tuple(record.owner), record.parent_id
        )


def choose(
    *,
    mission_id: object = None,
    disabled: bool = False,
    options: bool | None = None,
    default: Literal["auto", "none", "follow"] = "none",
) -> MissionChoice:
    """The caller's choice, checked: `mission_id` and `mission: false` or true exclude each
    other. `options` True: a new mission. With none of them: `default` ("none" for a plain
    run, "follow" for one that continues a job, "auto" for a workflow launch)."""
    if mission_id is not None:
        if disabled or options is not None:
            raise UserError("mission_id and mission exclude each other", hint="pass one of them")
        return MissionChoice("attach", model.check_id(mission_id))
    if disabled:
        return MissionChoice("none")
    return MissionChoice("auto" if options is True else default)


def check_before_launch(state_root: Path, choice: MissionChoice) -> None:
    """Strict attach: the mission must exist and be open. Raises UserError (nothing started)."""
    if choice.kind != "attach" or choice.mission_id is None:
        return
    mission = MissionStore(state_root).load(choice.mission_id)
    if mission.terminal:
        raise UserError(
            f"mission {mission.id} is {mission.status}; no run can join it",
            hint="start a new mission (leave out --mission)",
        )


def followed(state_root: Path, choice: MissionChoice, continued: str | None) -> MissionChoice:
    """A "follow" choice naming the mission of the job it continues, so that the mission's
    ceiling counts the new job too. Best effort: link_after_launch reads the link again and
    warns of what failed."""
    if choice.kind != "follow" or choice.mission_id is not None or not continued:
        return choice
    try:
        return MissionChoice("follow", MissionStore(state_root).mission_of_job(continued))
    except (SpecialistsError, OSError):
        return choice


def link_after_launch(
    state_root: Path, choice: MissionChoice, job: Launched, warnings: list[str]
) -> str | None:
    """Link the launched job to its mission (creating the automatic one); the mission id, or
    None. Never raises for a mission problem: the job runs, and `warnings` says what failed."""
    if choice.kind == "none":
        return None
    store = MissionStore(state_root)
    try:
        target = choice.mission_id
        if target is None and job.continue_from:
            target = store.mission_of_job(job.continue_from)  # a continued job stays on it
        if target is not None:
            store.update(
                target,
                lambda m: (model.link_run(m, job.job_id, job.specialist, ops.now_ms()), None),
            )
            mission_id: str | None = target
        elif choice.kind == "follow":
            return None  # `resume` of a job on no mission: it stays on none
        elif not job.prompt.strip():
            return None  # no task (a bead run from its issue): nothing to give a mission
        else:
            title = model.auto_title(job.specialist, job.prompt)
            run = Run(job.job_id, ops.now_ms(), specialist=job.specialist)
            mission_id = _create(store, title, job.prompt.strip(), job.owner, (run,)).id
    except (SpecialistsError, OSError) as exc:
        why = reason(exc)
        warnings.append(f"job {job.job_id} runs without a mission record: {why}")
        return None
    finally:
        warnings.extend(store.warnings)
    # A fast job may have gone idle before its link was written, so its news found no
    # mission: take that turn now (counted once either way, goal.py).
    step(state_root, job.job_id)
    return mission_id


def open_before_launch(
    state_root: Path,
    choice: MissionChoice,
    *,
    title: str,
    objective: str,
    owner: tuple[str, ...],
    warnings: list[str],
) -> str | None:
    """The mission of a launch whose record must name it before it starts (a workflow's script
    reads and writes the mission's state): the attached one, or a new one with no run linked
    yet (choice "auto"). Best effort for a new one: a failure is a warning and None."""
    if choice.kind == "attach":
        return choice.mission_id
    if choice.kind != "auto":
        return None
    store = MissionStore(state_root)
    try:
        return _create(store, title, objective, owner).id
    except (SpecialistsError, OSError) as exc:
        why = reason(exc)
        warnings.append(f"the launch runs without a mission record: {why}")
        return None
    finally:
        warnings.extend(store.warnings)


def discard_unused(state_root: Path, mission_id: str, warnings: list[str]) -> None:
    """Remove a mission `open_before_launch` made for a launch that then failed."""
    store = MissionStore(state_root)
    try:
        store.remove(mission_id)
    except (SpecialistsError, OSError) as exc:
        why = reason(exc)
        warnings.append(f"mission {mission_id} of the failed launch was left in place: {why}")


def _create(
    store: MissionStore,
    title: str,
    objective: str,
    owner: tuple[str, ...],
    runs: tuple[Run, ...] = (),
) -> model.Mission:
    """A new mission with this title and objective, clipped."""
    return ops.create(
        store,
        title=model.clip(title, model.TITLE_CHARS),
        objective=model.clip(objective, model.MAX_TEXT),
        owner=owner,
        runs=runs,
        at_ms=runs[0].linked_ms if runs else None,
    )
