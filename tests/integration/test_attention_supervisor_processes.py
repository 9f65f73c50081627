"""The tests of tests/unit/test_attention_supervisor.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specialists.runners.base import RunFinished
from specialists.runners.testing import Step
from specialists.store.records import JobRecord, JobStatus
from tests.support.starting import FakeSupervisors
from tests.support.supervising import Harness
from tests.unit.test_attention_supervisor import DOG, OFF, git_repo, notices, run_job, write


def stat_and_diff(review: JobRecord) -> tuple[str, str]:
    """What a review job was told (attention/review.py review_prompt)."""
    stat, diff = review.prompt.split("\nStat:\n", 1)[1].split("\nDiff:\n", 1)
    return stat, diff


def test_the_watchdog_reviews_a_changed_tree(tmp_path: Path, supervisors: FakeSupervisors):
    """A turn that changes a file: one review is started with the diff (read-only, keyed by
    its round, owned by the worker's owner), and the owner is told which job reviews it."""
    repo = git_repo(tmp_path / "repo")
    h = Harness(tmp_path)
    script: list[Step] = [write(repo / "kept.txt", "two\n"), RunFinished("edited")]
    run_job(h, script, cwd=str(repo), watchdog=DOG, attention=OFF)
    assert len(supervisors.started) == 1, h.events()
    [review] = supervisors.started
    stat, diff = stat_and_diff(review)
    assert review.watchdog["reviews"] == h.job_id and "+two" in diff and "kept.txt" in stat
    assert review.permission == "READ_ONLY" and review.start_key == f"review:{h.job_id}:1"
    assert review.owner == h.store.read_record(h.job_id).owner
    [event] = [e for e in h.events() if e["event"] == "watchdog"]
    assert event["outcome"] == "review" and event["review_job"] == review.id
    [notice] = notices(h)
    assert notice.details["attention"] == "watchdog" and review.id in notice.body


def test_the_watchdog_ignores_unchanged_reverted_ignored_and_own_state(
    tmp_path: Path, supervisors: FakeSupervisors
):
    """Nothing changed, a change that was reverted, an ignored file, our own files under
    .specialists/: no review runs."""
    repo = git_repo(tmp_path / "repo")
    h = Harness(tmp_path)
    script: list[Step] = [
        write(repo / "kept.txt", "changed\n"),
        write(repo / "ignored" / "build.log", "noise"),
        write(repo / ".specialists" / "jobs" / "x.json", "{}"),
        write(repo / "kept.txt", "one\n"),  # reverted
        RunFinished("nothing to see"),
    ]
    run_job(h, script, cwd=str(repo), watchdog=DOG, attention=OFF)
    assert supervisors.started == []
    assert not [e for e in h.events() if e["event"] == "watchdog"]


def test_the_watchdog_is_bounded(tmp_path: Path, supervisors: FakeSupervisors):
    """One review at a time (a busy review defers, and the next covers both turns), a
    budget per job (said once to the owner). Drives the supervisor's hook turn by turn."""
    from specialists.base.clock import FakeClock
    from specialists.features.attention.companion import Attendant
    from tests.support.jobs import make_record

    repo = git_repo(tmp_path / "repo")
    h = Harness(tmp_path)
    record = make_record(repo, id="1a2b3c4d", watchdog=DOG, attention=OFF)
    events: list[tuple[str, dict[str, Any]]] = []
    clock = FakeClock()
    attendant = Attendant(
        h.store,
        record,
        JobStatus(id=record.id, specialist="tester"),
        clock=clock,
        wall=clock,
        event=lambda kind, **fields: events.append((kind, fields)),
    )
    h.job_id = record.id
    attendant.began()
    for name, finish_reviews in (("a", False), ("b", False), ("c", True), ("d", True), ("e", True)):
        (repo / f"{name}.txt").write_text(name)
        if finish_reviews:
            supervisors.finish()
        attendant.turn_ended()
    outcomes = [f["outcome"] for kind, f in events if kind == "watchdog"]
    assert outcomes == ["review", "busy", "review", "budget_spent"]
    first, second = (stat_and_diff(r)[0] for r in supervisors.started)
    assert "a.txt" in first and "b.txt" in second and "c.txt" in second
    rounds = [f for kind, f in events if kind == "watchdog" and f["outcome"] == "review"]
    assert rounds[1]["base"] == rounds[0]["head"]
    assert [r.start_key for r in supervisors.started] == ["review:1a2b3c4d:1", "review:1a2b3c4d:2"]
    spent = [n for n in notices(h) if n.details.get("outcome") == "budget_spent"]
    assert len(spent) == 1


def test_a_review_job_is_not_reviewed(tmp_path: Path, supervisors: FakeSupervisors):
    repo = git_repo(tmp_path / "repo")
    h = Harness(tmp_path)
    marker = {**DOG, "reviews": "1a2b3c4d"}
    script: list[Step] = [write(repo / "kept.txt", "reviewer wrote\n"), RunFinished("x")]
    run_job(h, script, cwd=str(repo), watchdog=marker, attention=OFF)
    assert supervisors.started == []


def test_a_tree_that_is_not_git_turns_the_watchdog_off_with_a_notice(
    tmp_path: Path, supervisors: FakeSupervisors
):
    h = Harness(tmp_path)
    plain = tmp_path / "plain"
    plain.mkdir()
    st = run_job(h, [write(plain / "x", "1"), RunFinished("x")], cwd=str(plain), watchdog=DOG)
    assert st.status == "done" and supervisors.started == []
    assert any("watchdog off" in str(e.get("message")) for e in h.events())


def test_a_review_that_cannot_start_is_told_and_the_job_goes_on(
    tmp_path: Path, supervisors: FakeSupervisors
):
    repo = git_repo(tmp_path / "repo")
    h = Harness(tmp_path)
    script: list[Step] = [write(repo / "kept.txt", "two\n"), RunFinished("edited")]
    critic = {**DOG, "reviewer": "critic"}  # no such specialist: its planning fails
    st = run_job(h, script, cwd=str(repo), watchdog=critic, attention=OFF)
    assert st.status == "done"
    assert len(notices(h)) == 1, h.events()
    [notice] = notices(h)
    assert "could not start its review" in notice.body and "critic" in notice.body
