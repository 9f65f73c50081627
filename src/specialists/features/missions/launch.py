"""What a launch does about missions (the `run` of the CLI and of MCP, a workflow launch).

As the seed has it, a mission is one per workflow launch, shared by its children: a workflow
launch creates one unless told not to (`--no-mission`, `mission: false`), and a plain run
creates none unless asked (MCP `mission: true` or `mission: {...}`). `mission_id` attaches a
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

from dataclasses import dataclass, field
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
    title: str | None = None  # auto: the title (default: the task's first line)
    objective: str | None = None
    goal_budget: int | None = None  # auto: a goal mission with this token budget
    labels: tuple[str, ...] = field(default_factory=tuple)


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
    options: object = None,
    default: Literal["auto", "none", "follow"] = "none",
) -> MissionChoice:
    """The caller's choice, checked: `mission_id` and `mission: false` or options exclude
    each other. `options` is True (a new mission) or, as MCP's `mission: {...}`, may carry
    title, objective, goal, budget_tokens, labels. With none of them: `default` ("none" for a
    plain run, "follow" for one that continues a job, "auto" for a workflow launch)."""
    if mission_id is not None:
        if disabled or options is not None:
            raise UserError("mission_id and mission exclude each other", hint="pass one of them")
        return MissionChoice("attach", model.check_id(mission_id))
    if disabled:
        return MissionChoice("none")
    if options is None:
        return MissionChoice(default)
    if options is True:
        return MissionChoice("auto")
    if not isinstance(options, dict):
        raise UserError(
            "mission must be true, false or an object "
            "{title, objective, goal, budget_tokens, labels}"
        )
    unknown = sorted(set(options) - {"title", "objective", "goal", "budget_tokens", "labels"})
    if unknown:
        raise UserError(f"unknown mission field(s) {', '.join(map(repr, unknown))}")
    goal = options.get("goal", False)
    if not isinstance(goal, bool):
        raise UserError("mission.goal must be true or false")
    budget = options.get("budget_tokens")
    if goal:
        budget = model.check_budget(budget)
    elif budget is not None:
        raise UserError("budget_tokens is for a goal mission", hint="add goal: true")
    title = options.get("title")
    objective = options.get("objective")
    return MissionChoice(
        "auto",
        title=model.text(title, "mission.title", limit=model.MAX_TITLE)
        if title is not None
        else None,
        objective=model.text(objective, "mission.objective", required=False) or None,
        goal_budget=budget,
        labels=model.check_labels(options.get("labels", [])),
    )


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
            mission_id = _create(store, choice, title, job.prompt.strip(), job.owner, (run,)).id
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
        return _create(store, choice, title, objective, owner).id
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
    choice: MissionChoice,
    title: str,
    objective: str,
    owner: tuple[str, ...],
    runs: tuple[Run, ...] = (),
) -> model.Mission:
    """A new mission as `choice` asks (its title and objective, else these, clipped)."""
    return ops.create(
        store,
        title=choice.title or model.clip(title, model.TITLE_CHARS),
        objective=choice.objective or model.clip(objective, model.MAX_TEXT),
        owner=owner,
        labels=choice.labels,
        goal_budget=choice.goal_budget,
        runs=runs,
        at_ms=runs[0].linked_ms if runs else None,
    )
