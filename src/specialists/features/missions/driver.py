"""One goal step for a linked job's idle turn, on the real store: read, decide (goal.py),
record under the mission's lock, then post the notice to the mission's owner."""

from __future__ import annotations

from pathlib import Path

from specialists.base.errors import SpecialistsError
from specialists.features.missions.goal import Notify, Step, goal_step, turn_key
from specialists.features.missions.model import Mission
from specialists.features.missions.ops import job_tokens
from specialists.features.missions.state import read_state
from specialists.features.missions.store import MissionStore
from specialists.store.jobs import JobStore


def spent_tokens(jobs: JobStore, mission: Mission) -> int:
    """Input plus output tokens of every linked job: as recorded for a run last seen
    finished (final), read live for the others (those that can still be read)."""
    from specialists.store.records import TERMINAL_STATES

    total = 0
    for run in mission.runs:
        if run.status in TERMINAL_STATES:
            total += run.tokens
            continue
        try:
            st = jobs.read_status(run.job_id)
        except (SpecialistsError, OSError):
            continue  # gone or unreadable: what it spent is not known any more
        if st is not None:
            total += job_tokens(st)
    return total


def idle_turn(state_dir: Path, job_id: str) -> Step | None:
    """Take the goal step of `job_id`'s idle turn; the step taken, or None when the job is on
    no mission. The notice is posted after the step is recorded, with an id fixed by it, so
    a crash in between loses one notice, never repeats one."""
    from specialists.events.notices import post_to_owners

    store = MissionStore(state_dir)
    mission_id = store.mission_of_job(job_id)
    if mission_id is None:
        return None
    jobs = JobStore(state_dir, news=None)  # reads only: recovery is not run from here
    status = jobs.read_status(job_id)
    if status is None or status.status in ("starting", "running"):
        return None  # not idle: no turn to count
    turn = turn_key(state_dir, job_id, status.status)
    mission = store.load(mission_id)
    if mission.goal is None or mission.goal.ended is not None or mission.terminal:
        return None  # nothing to drive: no need for the lock or the linked statuses
    spent = spent_tokens(jobs, mission)
    state = read_state(store, mission_id)

    def step(m: Mission) -> tuple[Mission, Step]:
        runs = tuple(
            r.replace(status=status.status, tokens=job_tokens(status)) if r.job_id == job_id else r
            for r in m.runs
        )
        after, taken = goal_step(m.replace(runs=runs), turn, job_id, spent, state)
        return (after if isinstance(taken, Notify) else m), taken

    taken = store.update(mission_id, step)
    if isinstance(taken, Notify) and mission.owner:
        post_to_owners(
            state_dir,
            list(mission.owner),
            kind="notice",
            source_id=f"mission-{mission_id}",
            seq=taken.seq,
            body=taken.body,
            details=taken.details,
            args={"mission": mission_id},
            call_id=mission_id,
            tool="mission",
        )
    return taken
