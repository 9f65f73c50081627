"""The tests of tests/unit/test_attention_supervisor.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specialists.attention.testing import RecordingReviews
from specialists.jobs.records import JobStatus
from specialists.runners.base import RunFinished
from specialists.runners.testing import Step
from tests.support.supervising import Harness
from tests.unit.test_attention_supervisor import DOG, OFF, git_repo, notices, run_job, write


def test_the_watchdog_reviews_a_changed_tree(tmp_path: Path):
    """A turn that changes a file: one review is started with the diff, and the owner is
    told which job reviews it."""
    repo = git_repo(tmp_path / "repo")
    h = Harness(tmp_path)
    reviews = RecordingReviews()
    script: list[Step] = [write(repo / "kept.txt", "two\n"), RunFinished("edited")]
    run_job(h, script, reviews, cwd=str(repo), watchdog=DOG, attention=OFF)
    assert len(reviews.launched) == 1, h.events()
    [launched] = reviews.launched
    assert launched.worker == h.job_id and "+two" in launched.diff and "kept.txt" in launched.stat
    [event] = [e for e in h.events() if e["event"] == "watchdog"]
    assert event["outcome"] == "review" and event["review_job"] == "00000001"
    [notice] = notices(h)
    assert notice.details["attention"] == "watchdog" and "00000001" in notice.body


def test_the_watchdog_ignores_unchanged_reverted_ignored_and_own_state(tmp_path: Path):
    """Nothing changed, a change that was reverted, an ignored file, our own files under
    .specialists/: no review runs."""
    repo = git_repo(tmp_path / "repo")
    h = Harness(tmp_path)
    reviews = RecordingReviews()
    script: list[Step] = [
        write(repo / "kept.txt", "changed\n"),
        write(repo / "ignored" / "build.log", "noise"),
        write(repo / ".specialists" / "jobs" / "x.json", "{}"),
        write(repo / "kept.txt", "one\n"),  # reverted
        RunFinished("nothing to see"),
    ]
    run_job(h, script, reviews, cwd=str(repo), watchdog=DOG, attention=OFF)
    assert reviews.launched == []
    assert not [e for e in h.events() if e["event"] == "watchdog"]


def test_the_watchdog_is_bounded(tmp_path: Path):
    """One review at a time (a busy review defers, and the next covers both turns), a
    budget per job (said once to the owner). Drives the supervisor's hook turn by turn."""
    from specialists.supervise.attending import Attendant
    from specialists.testing import FakeClock
    from tests.support.jobs import make_record

    repo = git_repo(tmp_path / "repo")
    h = Harness(tmp_path)
    record = make_record(repo, id="1a2b3c4d", watchdog=DOG, attention=OFF)
    events: list[tuple[str, dict[str, Any]]] = []
    reviews = RecordingReviews()
    clock = FakeClock()
    attendant = Attendant(
        h.store,
        record,
        JobStatus(id=record.id, specialist="tester"),
        clock=clock,
        wall=clock,
        event=lambda kind, **fields: events.append((kind, fields)),
        reviews=reviews,
    )
    h.job_id = record.id
    attendant.began()
    for name, finish_reviews in (("a", False), ("b", False), ("c", True), ("d", True), ("e", True)):
        (repo / f"{name}.txt").write_text(name)
        if finish_reviews:
            reviews.active.clear()
        attendant.turn_ended()
    outcomes = [f["outcome"] for kind, f in events if kind == "watchdog"]
    assert outcomes == ["review", "busy", "review", "budget_spent"]
    first, second = reviews.launched
    assert "a.txt" in first.stat and "b.txt" in second.stat and "c.txt" in second.stat
    assert second.review.base == first.review.head
    spent = [n for n in notices(h) if n.details.get("outcome") == "budget_spent"]
    assert len(spent) == 1


def test_a_review_job_is_not_reviewed(tmp_path: Path):
    repo = git_repo(tmp_path / "repo")
    h = Harness(tmp_path)
    reviews = RecordingReviews()
    marker = {**DOG, "reviews": "1a2b3c4d"}
    script: list[Step] = [write(repo / "kept.txt", "reviewer wrote\n"), RunFinished("x")]
    run_job(h, script, reviews, cwd=str(repo), watchdog=marker, attention=OFF)
    assert reviews.launched == []


def test_a_tree_that_is_not_git_turns_the_watchdog_off_with_a_notice(tmp_path: Path):
    h = Harness(tmp_path)
    plain = tmp_path / "plain"
    plain.mkdir()
    reviews = RecordingReviews()
    st = run_job(
        h, [write(plain / "x", "1"), RunFinished("x")], reviews, cwd=str(plain), watchdog=DOG
    )
    assert st.status == "done" and reviews.launched == []
    assert any("watchdog off" in str(e.get("message")) for e in h.events())


def test_a_review_that_cannot_start_is_told_and_the_job_goes_on(tmp_path: Path):
    repo = git_repo(tmp_path / "repo")
    h = Harness(tmp_path)
    reviews = RecordingReviews(fail_with="unknown specialist 'critic'")
    script: list[Step] = [write(repo / "kept.txt", "two\n"), RunFinished("edited")]
    st = run_job(h, script, reviews, cwd=str(repo), watchdog=DOG, attention=OFF)
    assert st.status == "done"
    assert len(notices(h)) == 1, h.events()
    [notice] = notices(h)
    assert "could not start its review" in notice.body and "critic" in notice.body
