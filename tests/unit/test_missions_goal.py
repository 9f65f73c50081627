"""The goal driver (issue 12 item 1): one needs-attention notice to the mission's owner after
each idle turn of a linked job, naming state.nextReadyAction or the first open decision;
quiet while paused, silent once closed; and at the budget one last notice that says it
stopped unfinished, never that it succeeded. Driven through the real news seam over fake
job statuses (no agent, no clock: every step is one call)."""

from __future__ import annotations

from pathlib import Path

from specialists.events.inbox import Inbox
from specialists.features.missions import model, ops
from specialists.features.missions import news as mission_news
from specialists.features.missions.goal import GoalQuiet, goal_step
from specialists.features.missions.state import state_set
from specialists.features.missions.store import MissionStore
from specialists.store.jobs import JobStore
from specialists.store.records import JobStatus
from specialists.store.writer import JobWriter
from tests.support.jobs import new_job

OWNER = "claude-goal"


def status(jobs: JobStore, job_id: str, state: str, tokens: int) -> None:
    writer = JobWriter(jobs, job_id)
    writer.write_status(
        JobStatus(id=job_id, specialist="worker", status=state, tokens={"input": tokens})
    )
    writer.close()


def answer(jobs: JobStore, job_id: str, n: int) -> None:
    folder = jobs.job_dir(job_id) / "answers"
    folder.mkdir(exist_ok=True)
    (folder / f"{n}.txt").write_text(f"answer {n}")


def notices(root: Path) -> list:
    return [e for e in Inbox(root, OWNER).pending().events if e.id.startswith("mission-")]


def setup(tmp_path: Path, budget: int) -> tuple[JobStore, MissionStore, str]:
    root = tmp_path / ".specialists"
    jobs = JobStore(root, news=None)
    record, lock = new_job(jobs, tmp_path, owner=[])  # no owner: only the mission's notices
    lock.release()
    store = MissionStore(root, index_dir=tmp_path / "index")
    ops.create(store, title="Ship it", mission_id="g1", owner=(OWNER,), goal_budget=budget)
    store.update("g1", lambda m: (model.link_run(m, record.id, "worker", 1), None))
    return jobs, store, record.id


def test_a_goal_nudges_after_each_idle_turn_and_stops_at_its_budget(tmp_path):
    jobs, store, job = setup(tmp_path, budget=100)
    root = jobs.root
    news = mission_news
    state_set(root, "g1", "nextReadyAction", "run the integration tests", store=store)

    status(jobs, job, "waiting", 30)
    answer(jobs, job, 1)
    news.step(root, job)
    news.step(root, job)  # the same idle turn told twice: one notice
    first = notices(root)
    assert [e.id for e in first] == ["mission-g1:notice:1"]
    assert "Next ready action: run the integration tests" in first[0].body
    assert first[0].details["needs_attention"] is True
    assert first[0].details["next_action_from"] == "state"

    state_set(root, "g1", "nextReadyAction", "", store=store)
    store.update("g1", lambda m: (model.add_decision(m, "Keep the v1 API?", 2)[0], None))
    status(jobs, job, "waiting", 60)
    answer(jobs, job, 2)
    news.step(root, job)
    second = notices(root)[-1]
    assert second.id == "mission-g1:notice:2"
    assert "First open decision: d1: Keep the v1 API?" in second.body

    store.update("g1", lambda m: (model.set_paused(m, True, 3), None))
    answer(jobs, job, 3)
    news.step(root, job)
    assert len(notices(root)) == 2  # paused: quiet
    store.update("g1", lambda m: (model.set_paused(m, False, 4), None))

    status(jobs, job, "done", 130)  # over the budget
    news.step(root, job)
    last = notices(root)[-1]
    assert last.id == "mission-g1:notice:3"
    assert "budget is spent (130 of 100 tokens spent)" in last.body
    assert "NOT done" in last.body and "completed (job" not in last.body
    assert last.details["goal"] == "budget-exhausted"
    mission = store.load("g1")
    assert mission.status == "active"  # never closed or marked completed by the driver
    assert mission.goal is not None and mission.goal.ended == "budget-exhausted"

    answer(jobs, job, 4)
    news.step(root, job)
    assert len(notices(root)) == 3  # the loop has ended: nothing more


def test_a_closed_goal_mission_says_nothing(tmp_path):
    jobs, store, job = setup(tmp_path, budget=1000)
    store.update("g1", lambda m: (model.close(m, "cancelled", "not needed", 5), None))
    status(jobs, job, "done", 10)
    mission_news.step(jobs.root, job)
    assert notices(jobs.root) == []
    assert store.load("g1").goal.ended == "closed"  # type: ignore[union-attr]


def test_a_job_on_no_mission_costs_one_lstat_and_no_goal(tmp_path):
    jobs, store, _ = setup(tmp_path, budget=10)
    record, lock = new_job(jobs, tmp_path, owner=[])
    lock.release()
    status(jobs, record.id, "done", 99)
    mission_news.step(jobs.root, record.id)
    assert notices(jobs.root) == [] and store.load("g1").goal.notices == 0  # type: ignore[union-attr]


def test_goal_step_is_pure_and_names_what_to_do():
    mission = model.Mission(
        id="m",
        title="T",
        created_ms=0,
        updated_ms=0,
        project_root="/p",
        goal=model.Goal(budget_tokens=50),
        owner=(OWNER,),
    )
    after, step = goal_step(mission, "j:end", "j", 10, {})
    assert step.kind == "notify" and "No next action is recorded" in step.body
    again, quiet = goal_step(after, "j:end", "j", 10, {})
    assert isinstance(quiet, GoalQuiet) and quiet.reason == "seen" and again is after
    _, nothing = goal_step(
        model.Mission(id="m", title="T", created_ms=0, updated_ms=0, project_root="/p"),
        "j:end",
        "j",
        0,
        {},
    )
    assert isinstance(nothing, GoalQuiet) and nothing.reason == "no goal"
