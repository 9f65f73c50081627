"""`feed JOB --tree --follow`: a descendant found late is tailed once (cmd_feed.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from specialists.events import notices as owner_news
from specialists.fronts.cli.cmd_feed import _descendants, _more_below, _Tail
from specialists.store.jobs import JobStore
from tests.support.fleet import BASE_MS, write_status


def test_a_child_found_after_every_known_job_ended_is_not_tailed_again(tmp_path: Path) -> None:
    """The tree's known jobs have ended and a child started at the end: the look that finds
    it makes it known, so the periodic look for descendants does not add a second tail (CI
    printed such a child's final event twice)."""
    store = JobStore(tmp_path / ".specialists", news=owner_news)
    jobs = tmp_path / ".specialists" / "jobs"
    write_status(jobs, "aaaa0001", status="done")
    write_status(jobs, "aaaa0002", status="done", parent_id="aaaa0001", started_at_ms=BASE_MS + 1)
    args = argparse.Namespace(tree=True)
    tails = [_Tail(store, "aaaa0001", 0), _Tail(store, "aaaa0002", 0)]
    known = {t.job_id for t in tails}
    write_status(jobs, "aaaa0003", status="running", parent_id="aaaa0001",
                 started_at_ms=BASE_MS + 2)  # fmt: skip
    assert _more_below(args, store, "aaaa0001", tails, known)
    assert [t.job_id for t in tails] == ["aaaa0001", "aaaa0002", "aaaa0003"]
    assert _descendants(store, "aaaa0001", known) == []
    assert not _more_below(args, store, "aaaa0001", tails, known)
    assert len(tails) == 3
