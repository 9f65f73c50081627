"""The tests of tests/unit/test_thread_store.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

from specialists.events.inbox import Inbox
from specialists.threads.records import ThreadRecord, ThreadStore, new_thread_id
from tests.support.jobs import new_job
from tests.support.threads import ROOT_OWNER, call
from tests.support.tmpfs import fill, small_tmpfs
from tests.unit.test_thread_store import _jobs, _report_many, _thread


def test_reports_from_many_processes_at_once_are_numbered_and_delivered_once(
    tmp_path: Path,
) -> None:
    """Eight processes report ten times each at the same moment: 80 sequence numbers, 80
    distinct events in the parent's inbox, none lost and none twice."""
    state_root = tmp_path / ".specialists"
    record = _thread(state_root)
    ctx = multiprocessing.get_context("fork")
    procs = [
        ctx.Process(target=_report_many, args=(str(state_root), record.to_dict(), 10))
        for _ in range(8)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    seqs = [r["seq"] for r in ThreadStore(state_root).reports(record.id)]
    assert sorted(seqs) == list(range(1, 81))
    events = Inbox(state_root, ROOT_OWNER).pending(max_events=1000).events
    assert len(events) == 80 and len({e.id for e in events}) == 80


def test_a_report_on_a_full_disk_is_an_error_the_child_can_read(tmp_path: Path) -> None:
    """The parent's inbox is on a full disk: the report is one error reply naming the cause,
    not a traceback through the front."""
    project = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    state_root = project / ".specialists"
    store_job, lock = new_job(_jobs(state_root), project, runner="command")
    lock.release()
    tid = new_thread_id()
    threads = ThreadStore(state_root)
    threads.reserve_id(tid)
    threads.write(ThreadRecord(tid, ROOT_OWNER, ("root", tid), store_job.id, "x", True, "c", 1))
    # The job's record must say it is this thread for the position to find it.
    job_file = _jobs(state_root).job_dir(store_job.id) / "job.json"
    data = json.loads(job_file.read_text())
    data["thread"] = {"id": tid, "parent": ROOT_OWNER, "stack": ["root", tid]}
    job_file.write_text(json.dumps(data))
    owners = state_root / "owners"
    with small_tmpfs(owners, "128k"):
        fill(owners)
        from specialists.toolset.table import Caller

        child = Caller(state_root, f"job-{store_job.id}", project, job_id=store_job.id)
        reply = call("report_to_parent", {"report": "done " * 100}, child)
    assert reply.is_error and "\n" not in reply.text
    assert "No space left on device" in reply.text and "free some space" in reply.text
