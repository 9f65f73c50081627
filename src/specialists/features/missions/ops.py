"""What people and programs do with missions: create, show (with live run statuses), list,
and prune terminal ones past their retention. Cores return outcomes and warnings; only the
interfaces print.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from specialists.base.errors import SpecialistsError
from specialists.features.missions.model import (
    Goal,
    Mission,
    Run,
    check_budget,
    check_id,
    check_labels,
    text,
)
from specialists.features.missions.store import DamagedMission, MissionStore

if TYPE_CHECKING:
    from specialists.store.jobs import JobStore
    from specialists.store.records import JobStatus

DEFAULT_RETENTION_DAYS = 30.0
RETENTION_ENV = "SPECIALISTS_MISSION_TTL_DAYS"


def now_ms() -> int:
    return int(time.time() * 1000)


def new_id() -> str:
    return "ms-" + os.urandom(4).hex()


def create(
    store: MissionStore,
    *,
    title: object,
    objective: object = "",
    owner: tuple[str, ...] = (),
    labels: object = (),
    goal_budget: object = None,
    mission_id: str | None = None,
    runs: tuple[Run, ...] = (),
    at_ms: int | None = None,
    ceiling: dict[str, Any] | None = None,
) -> Mission:
    """A new active mission, written whole or not at all. `ceiling`: what the jobs started
    on it may spend together (features/spend/ceiling.py `own_ceiling`)."""
    at = now_ms() if at_ms is None else at_ms
    goal = None if goal_budget is None else Goal(check_budget(goal_budget))
    mission = Mission(
        id=check_id(mission_id) if mission_id else new_id(),
        title=text(title, "a mission title", limit=200),
        created_ms=at,
        updated_ms=at,
        project_root=str(store.root.parent.parent),
        objective=text(objective, "an objective", required=False),
        owner=tuple(owner),
        labels=check_labels(list(labels) if isinstance(labels, tuple) else labels),
        runs=runs,
        goal=goal,
        ceiling=dict(ceiling or {}),
    )
    store.create(mission, now_ms=at)
    return mission


# --- show -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunView:
    job_id: str
    specialist: str
    status: str  # live when it could be read; else as last seen, and a warning says why
    tokens: int = 0
    live: bool = True
    spent: dict[str, Any] | None = None  # with its children (store/rollup.py), when known
    parent: str | None = None


@dataclass(frozen=True)
class Shown:
    mission: Mission
    runs: list[RunView]
    state: dict[str, Any] | None  # None: unreadable (a warning says why)
    warnings: list[str] = field(default_factory=list)

    def spent(self) -> dict[str, Any]:
        """What the linked jobs spent, a workflow's children included, each job once: a
        run below a linked workflow is in that workflow's figures already."""
        from specialists.store.rollup import each_once

        return each_once((v.job_id, v.parent, v.spent) for v in self.runs)


def job_tokens(status: JobStatus) -> int:
    """What a job spent against a goal's budget: input plus output tokens (cache reads are
    the same context read again, and would spend a budget on nothing new)."""
    return int(status.tokens.get("input", 0)) + int(status.tokens.get("output", 0))


def read_run(jobs: JobStore, run: Run) -> tuple[RunView, str | None]:
    """One linked job's status, or its last-seen one and the reason it is not live. A run
    last seen finished is not read again (a finished job never changes; only gc removes
    it), so 500 finished runs cost 500 lstat calls."""
    from specialists.store.records import TERMINAL_STATES
    from specialists.store.recovery import recover_if_dead, settle_unstarted
    from specialists.store.rollup import rollup

    last = RunView(run.job_id, run.specialist, run.status, run.tokens, False, run.spent, run.parent)
    try:
        job_dir = jobs.job_dir(run.job_id)
        if run.status in TERMINAL_STATES and run.spent is not None:
            if os.path.lexists(job_dir):
                return replace(last, live=True), None
            st = None
        elif run.status in TERMINAL_STATES:  # seen finished before its spending was kept
            st = jobs.read_status(run.job_id) if os.path.lexists(job_dir) else None
        else:
            st = jobs.read_status(run.job_id)
        if st is None:
            if not os.path.lexists(job_dir):
                return last, f"job {run.job_id} is gone (collected by gc?); last seen {run.status}"
            st = settle_unstarted(jobs, run.job_id)
        st = recover_if_dead(jobs, run.job_id, st)
    except (SpecialistsError, OSError) as exc:
        why = exc.message if isinstance(exc, SpecialistsError) else str(exc)
        return last, f"job {run.job_id}: status unreadable ({why}); last seen {run.status}"
    specialist = run.specialist or st.specialist
    view = RunView(
        run.job_id, specialist, st.status, job_tokens(st), True, rollup(st), st.parent_id
    )
    return view, None


def show(store: MissionStore, jobs: JobStore, mission_id: str) -> Shown:
    """The mission with its linked jobs' live statuses. A status that cannot be read is a
    warning, never a reason to hide the mission. Changed statuses are saved back, so a later
    `list` shows them too."""
    from specialists.features.missions.state import read_state

    mission = store.load(mission_id)
    views, warnings = [], []
    for run in mission.runs:
        view, warning = read_run(jobs, run)
        views.append(view)
        if warning:
            warnings.append(warning)
    live = {v.job_id: v for v in views if v.live}

    def refreshed(m: Mission) -> tuple[Mission, Mission]:
        after = m.replace(runs=[_seen(r, live.get(r.job_id)) for r in m.runs])
        return after, after

    if any(_seen(r, live.get(r.job_id)) != r for r in mission.runs):
        try:
            mission = store.update(mission_id, refreshed)
        except (SpecialistsError, OSError) as exc:
            why = exc.message if isinstance(exc, SpecialistsError) else str(exc)
            warnings.append(f"the refreshed run statuses were not saved: {why}")
    state: dict[str, Any] | None
    try:
        state = read_state(store, mission_id)
    except (SpecialistsError, OSError) as exc:
        state = None
        warnings.append(
            f"state unreadable: {exc.message if isinstance(exc, SpecialistsError) else exc}"
        )
    return Shown(mission, views, state, warnings + store.warnings)


def _seen(r: Run, view: RunView | None) -> Run:
    """The run as its live view shows it (as it was when it could not be read)."""
    if view is None:
        return r
    return r.replace(status=view.status, tokens=view.tokens, spent=view.spent, parent=view.parent)


# --- retention ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pruned:
    removed: list[str]
    warnings: list[str]


def prune(store: MissionStore, *, days: float | None = None, at_ms: int | None = None) -> Pruned:
    """Remove missions closed more than `days` ago (default: the retention). Open and paused
    missions are never removed, however old; damaged ones are left in place and named."""
    from specialists.store.gc import env_days

    at = now_ms() if at_ms is None else at_ms
    # SPECIALISTS_MISSION_TTL_DAYS (default 30): a bad value is a ConfigError (exit 2)
    limit = env_days(RETENTION_ENV, DEFAULT_RETENTION_DAYS) if days is None else days
    removed, warnings = [], []
    for item in store.all():
        if isinstance(item, DamagedMission):
            warnings.append(f"mission {item.id} left in place: {item.problem}")
            continue
        if not item.terminal or item.closed_ms is None:
            continue
        if at - item.closed_ms < limit * 86_400_000:
            continue
        try:
            store.remove(item.id)
            removed.append(item.id)
        except (SpecialistsError, OSError) as exc:
            warnings.append(f"mission {item.id} not removed: {exc}")
    return Pruned(removed, warnings + store.warnings)
