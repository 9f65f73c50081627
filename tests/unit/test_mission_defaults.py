"""Missions as the seed has them (issue 22 item 2): a plain run neither prints a mission nor
leaves one open; a workflow launch gets one, named in its record for its script's state; the
missions plain runs used to leave open are closed on the next look once their job ended, and
a mission anyone touched is never closed for them."""

from __future__ import annotations

import os
from pathlib import Path

from specialists.base.owner import Owner
from specialists.features.missions import model, ops
from specialists.features.missions.leftovers import close_left_over, looks_left_over
from specialists.features.missions.model import Run, auto_title
from specialists.features.missions.state import state_set
from specialists.features.missions.store import MissionStore
from specialists.features.workflows.launch import start_on_mission
from specialists.features.workflows.source import Source
from specialists.fronts.cli.main import main
from specialists.fronts.hooks.session_start import context
from specialists.store.jobs import JobStore
from specialists.store.news import NEWS
from specialists.store.records import JobStatus
from specialists.store.writer import JobWriter
from tests.support.jobs import new_job


def state_root() -> Path:
    return Path(os.environ["SPECIALISTS_PROJECT_ROOT"]) / ".specialists"


def jobs() -> JobStore:
    return JobStore(state_root(), news=NEWS)


def ended_job(status: str, **fields: object) -> str:
    store = jobs()
    record, lock = new_job(store, Path(os.environ["SPECIALISTS_PROJECT_ROOT"]))
    writer = JobWriter(store, record.id)
    writer.write_status(JobStatus(id=record.id, specialist="reviewer", status=status, **fields))  # type: ignore[arg-type]
    writer.close()
    lock.release()
    return record.id


def old_auto_mission(job_id: str, task: str = "Review the last commit\nin detail") -> str:
    """A mission exactly as a plain `specialists run` made it before."""
    store = MissionStore(state_root())
    return ops.create(
        store,
        title=auto_title("reviewer", task),
        objective=task,
        owner=("claude-s1",),
        runs=(Run(job_id, 1, specialist="reviewer"),),
    ).id


def test_left_over_missions_of_ended_runs_close_with_their_outcome_and_others_stay():
    done = old_auto_mission(ended_job("done"))
    failed = old_auto_mission(ended_job("error", error="boom"))
    cancelled = old_auto_mission(ended_job("cancelled"))
    gone = old_auto_mission("0badf00d")  # its job was collected
    # Not leftovers: the run still runs, or someone used the mission since.
    running = old_auto_mission(ended_job("running", supervisor_pid=os.getpid()))
    decided = old_auto_mission(ended_job("done"))
    ms = MissionStore(state_root())
    ms.update(decided, lambda m: (model.add_decision(m, "ship it?", 2)[0], None))
    with_state = old_auto_mission(ended_job("done"))
    state_set(state_root(), with_state, "step", 2)
    by_hand = ops.create(
        ms, title="Ship auth", runs=(Run(ended_job("done"), 1, specialist="reviewer"),)
    ).id

    closed, warnings = close_left_over(ms, jobs())

    assert sorted(closed) == sorted([done, failed, cancelled, gone]) and warnings == []
    statuses = {mid: ms.load(mid).status for mid in (done, failed, cancelled, gone)}
    assert statuses == {
        done: "completed",
        failed: "failed",
        cancelled: "cancelled",
        gone: "cancelled",
    }
    assert "Plain runs no longer keep a mission open" in ms.load(done).summary
    for mid in (running, decided, with_state, by_hand):
        assert ms.load(mid).status == "active", mid
    assert close_left_over(ms, jobs()) == ([], [])  # a second look changes nothing


def test_a_mission_changed_between_the_look_and_the_close_is_not_closed():
    mid = old_auto_mission(ended_job("done"))
    ms = MissionStore(state_root())
    mission = ms.load(mid)
    assert looks_left_over(mission)
    labelled = model.add_decision(mission, "keep going?", 5)[0]
    assert not looks_left_over(labelled)


def test_session_start_tells_only_of_missions_someone_keeps_open():
    old_auto_mission(ended_job("done"))
    kept = ops.create(MissionStore(state_root()), title="Ship auth").id
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    text = context(state_root(), root, owner=Owner(()))
    line = next(x for x in text.splitlines() if "open mission" in x)
    assert line.startswith(f"[specialists] 1 open mission(s): {kept}.")


def test_mission_list_closes_leftovers_and_says_so(capsys):
    old_auto_mission(ended_job("done"))
    assert main(["mission", "list"]) == 0
    out, err = capsys.readouterr()
    assert "closed 1 mission(s) that plain runs had left open" in err
    assert out.startswith("no open missions")


def test_a_workflow_launch_opens_one_mission_names_it_and_links_its_job():
    from specialists.features.missions.launch import MissionChoice
    from specialists.features.workflows.launch import WorkflowRequest, workflow_record

    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    source = Source(
        "declarative",
        "fan",
        None,
        {"steps": [{"run": {"key": "a", "agent": "reviewer", "task": "x"}}]},
    )
    request = WorkflowRequest(source, {"task": "Review auth\nthen fix"})
    record = workflow_record(root, request).replace(owner=["claude-s1"])
    started: list[dict[str, object]] = []

    def start(r):
        started.append(dict(r.runner_options))
        return "0123abcd"

    warnings: list[str] = []
    job_id, mid = start_on_mission(state_root(), record, MissionChoice("auto"), start, warnings)
    assert job_id == "0123abcd" and mid and not warnings
    assert started[0]["mission_id"] == mid
    mission = MissionStore(state_root()).load(mid)
    assert mission.title == "workflow fan: Review auth" and mission.owner == ["claude-s1"]
    assert [r.job_id for r in mission.runs] == ["0123abcd"]

    # A launch that fails leaves no mission it made; `none` makes none.
    def broken(r):
        raise OSError(28, "No space left on device")

    before = set(MissionStore(state_root()).ids())
    try:
        start_on_mission(state_root(), record, MissionChoice("auto"), broken, warnings)
    except OSError:
        pass
    assert set(MissionStore(state_root()).ids()) == before
    _, none = start_on_mission(state_root(), record, MissionChoice("none"), start, warnings)
    assert none is None and "mission_id" not in started[-1]
