"""The thread registry under a hostile world: races, crashes, damage, links, a full disk."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from specialists.base.errors import StoreError
from specialists.events.inbox import Inbox
from specialists.features.threads.closing import report, settle
from specialists.features.threads.listing import thread_rows
from specialists.features.threads.records import Closing, ThreadRecord, ThreadStore, new_thread_id
from specialists.features.threads.state import Position
from specialists.store.jobs import JobStore
from tests.support.jobs import job_end, make_record
from tests.support.threads import ROOT_OWNER, call, root_caller, unsupervised_child


def _thread(state_root: Path, job_id: str = "0123abcd") -> ThreadRecord:
    threads = ThreadStore(state_root)
    tid = new_thread_id()
    assert threads.reserve_id(tid)
    record = ThreadRecord(tid, ROOT_OWNER, ("root", tid), job_id, "do it", True, "command", 1)
    threads.write(record)
    return record


def _position(state_root: Path, record: ThreadRecord) -> Position:
    job = make_record(state_root.parent, id=record.job_id, thread={"id": record.id})
    return Position(record.id, record.stack, job, None)


def test_ids_are_128_random_bits_and_never_reused(tmp_path: Path) -> None:
    """R-H0: t- and 32 hex digits; a reserved id is never handed out twice."""
    threads = ThreadStore(tmp_path / ".specialists")
    ids = {threads.reserve() for _ in range(200)}
    assert len(ids) == 200 and all(len(i) == 34 and i.startswith("t-") for i in ids)
    assert not threads.reserve_id(next(iter(ids)))


def test_only_one_close_wins_however_many_race(tmp_path: Path) -> None:
    """Sixteen closers at once (the child's close_thread, the runtime, a recovery): exactly
    one claims the close."""
    state_root = tmp_path / ".specialists"
    record = _thread(state_root)
    threads = ThreadStore(state_root)
    wins: list[bool] = []
    barrier = threading.Barrier(16)

    def claim(n: int) -> None:
        barrier.wait()
        wins.append(threads.begin_close(record.id, Closing("child", f"r{n}", n)))

    workers = [threading.Thread(target=claim, args=(n,)) for n in range(16)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert wins.count(True) == 1
    assert threads.closing(record.id) is not None


def _report_many(state_root: str, record: dict[str, object], n: int) -> None:
    root = Path(state_root)
    rec = ThreadRecord(**{**record, "stack": tuple(record["stack"])})  # type: ignore[arg-type]
    for i in range(n):
        report(root, _position(root, rec), {"report": f"{os.getpid()}-{i}"}, i)


def test_a_report_line_cut_short_by_a_crash_keeps_its_number(tmp_path: Path) -> None:
    """A crash mid-append leaves a partial line: the next report takes the next number, so
    an id already delivered is never reused for other text."""
    state_root = tmp_path / ".specialists"
    record = _thread(state_root)
    threads = ThreadStore(state_root)
    assert threads.append_report(record.id, "one", 1) == 1
    with open(threads.dir(record.id) / "reports.jsonl", "ab") as fh:
        fh.write(b'{"seq": 2, "text": "half')
    assert threads.append_report(record.id, "three", 3) == 3


def test_damaged_records_are_problems_not_crashes(tmp_path: Path) -> None:
    """A thread.json that is not JSON, or has a forged stack, is one problem line in the
    listing; a damaged closed.json counts as a failed close, never as a success."""
    state_root = tmp_path / ".specialists"
    good = _thread(state_root)
    bad = _thread(state_root)
    forged = _thread(state_root)
    threads = ThreadStore(state_root)
    (threads.dir(bad.id) / "thread.json").write_text("{not json")
    data = forged.to_dict() | {"stack": ["root", "../../etc"]}
    (threads.dir(forged.id) / "thread.json").write_text(json.dumps(data))
    records, problems = threads.all()
    assert [r.id for r in records] == [good.id] and len(problems) == 2
    with pytest.raises(StoreError):
        threads.get(forged.id)
    (threads.dir(good.id) / "closed.json").write_text("garbage")
    closed = threads.closed(good.id)
    assert closed is not None and closed.failed


def test_a_symlinked_threads_directory_is_refused(tmp_path: Path) -> None:
    """A planted link never leads a spawn outside the project: one clear error, nothing
    written at the link's target."""
    project = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / ".specialists").mkdir(exist_ok=True)
    (project / ".specialists" / "threads").symlink_to(elsewhere)
    reply = call(
        "spawn_thread",
        {"instructions": "x", "child_of": ["root"], "fresh_context": True, "specialist": "echo"},
        root_caller(project),
    )
    assert reply.is_error and "not a directory" in reply.text
    assert list(elsewhere.iterdir()) == []


def _jobs(state_root: Path) -> JobStore:
    return JobStore(state_root, news=None)


def test_settling_twice_sends_one_child_closed(tmp_path: Path) -> None:
    """The supervisor's end and a recovery (or a parent's check) both try: one event."""
    project = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    state_root = project / ".specialists"
    tid, job, lock = unsupervised_child(project, runner="command")
    status = _jobs(state_root).read_status(job.id)
    assert status is not None
    from specialists.store.writer import JobWriter, mark_ended

    writer = JobWriter(_jobs(state_root), job.id, patience_s=0)
    mark_ended(status, "done", None, 5)
    writer.write_final(status, "done")
    writer.close()
    lock.release()
    first = settle(state_root, job.id)
    assert first == f"{tid}:child_closed:1"
    assert settle(state_root, job.id) is None
    rows, _ = thread_rows(state_root)  # a parent's look (settled_view): nothing to close again
    assert [(c.record.id, c.closed is not None) for c in rows] == [(tid, True)]
    events = Inbox(state_root, ROOT_OWNER).pending().events
    assert [e.id for e in events] == [first]
    # The end told again (recovery after a supervisor that told it): the same child_closed
    # addresses the parent, so it gets no generic notice; its inbox drops the copy.
    from specialists.features.threads.plugin import _closed

    record = _jobs(state_root).read_record(job.id)
    (told,) = _closed(job_end(_jobs(state_root), record, "error", recovered=True))
    assert (told.owner, told.kind, told.post(state_root).id) == (ROOT_OWNER, "child_closed", first)
    assert [e.id for e in Inbox(state_root, ROOT_OWNER).pending().events] == [first]
