"""The control inbox and the job directory are untrusted input (issue 7 item 5).

An agent runs with the project as its working directory and can write anything under
.specialists/. Each test plants one thing and proves that the supervisor neither dies nor
hangs, that nothing outside the store is created, appended to or deleted, and that the
job's answer is kept. The supervisor runs in-process on a scripted runner.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from specialists.base.errors import StoreError
from specialists.events import notices as owner_news
from specialists.runners.base import Activity, RunFinished
from specialists.runners.testing import ScriptedRunner
from specialists.store.atomic import write_atomic
from specialists.store.control import post_request
from specialists.store.gc import collect
from specialists.store.jobs import JobStore
from specialists.store.view import current_status, overview
from specialists.store.writer import JobWriter
from specialists.supervise.supervisor import Supervisor
from tests.support.jobs import TEST_OWNER, new_job, take_requests, wait_for

pytestmark = pytest.mark.timeout(60)  # a regression here hangs the supervisor


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    return JobStore(tmp_path / ".specialists", news=owner_news)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory outside the store, with one file the tool must never touch."""
    path = tmp_path / "outside"
    path.mkdir()
    (path / "precious.txt").write_text("keep me")
    return path


def untouched(outside: Path) -> bool:
    return (
        sorted(p.name for p in outside.iterdir()) == ["precious.txt"]
        and (outside / "precious.txt").read_text() == "keep me"
    )


def start(store: JobStore, tmp_path: Path, script, **rec):
    record, lock = new_job(store, tmp_path, **rec)
    sup = Supervisor(store, record, ScriptedRunner(script), tick=0.01, handle_signals=False)
    thread = threading.Thread(target=sup.run)
    thread.start()
    wait_for(lambda: store.read_status(record.id).status == "running")
    return record, lock, sup, thread


def finish(store, record, lock, sup, thread):
    thread.join(20)
    assert not thread.is_alive(), "the supervisor hung"
    lock.release()
    return sup.status, store.read_events(record.id)


def notices(events):
    return [e["message"] for e in events if e["event"] == "notice"]


REQUEST = {"id": "abcd0123", "kind": "steer", "message": "hi", "sent_at_ms": 1}

# name -> how to plant a bad entry named like a request in control/
BAD_REQUESTS = {
    "float overflow": lambda p: p.write_text(json.dumps(REQUEST)[:-1] + ', "sent_at_ms": 1e999}'),
    "int overflow": lambda p: p.write_text(json.dumps({**REQUEST, "sent_at_ms": 10**40})),
    "int over 4300 digits": lambda p: p.write_text(
        json.dumps(REQUEST)[:-1] + ', "sent_at_ms": 1' + "0" * 5000 + "}"
    ),
    "directory": lambda p: p.mkdir(),
    "FIFO": lambda p: os.mkfifo(p),
    "nested 100,000 deep": lambda p: p.write_text("[" * 100_000 + "]" * 100_000),
    "symlink to /proc/self/mem": lambda p: p.symlink_to("/proc/self/mem"),
    "huge": lambda p: p.write_text(json.dumps({**REQUEST, "message": "x" * 3_000_000})),
    "unknown kind": lambda p: p.write_text(json.dumps({**REQUEST, "kind": "format_disk"})),
}


@pytest.mark.parametrize("plant", list(BAD_REQUESTS))
def test_a_bad_request_is_reported_once_and_set_aside(store, tmp_path, plant):
    record, lock, sup, thread = start(store, tmp_path, [Activity("thinking"), 30.0])
    inbox = store.job_dir(record.id) / "control"  # as release 0.1.0 left it: still read
    inbox.mkdir()
    name = "00000000000000000001-abcd0123.json"  # sorts before any real request
    BAD_REQUESTS[plant](inbox / name)
    post_request(store.job_dir(record.id), "stop")
    status, events = finish(store, record, lock, sup, thread)
    assert status.status == "cancelled"  # alive to the end, and it heard the real request
    bad = [n for n in notices(events) if name in n]
    assert len(bad) == 1 and "ignored" in bad[0], notices(events)
    assert os.path.lexists(inbox / f".{name}.bad")
    assert [e for e in events if e["event"] == "stop_ack"]


def test_a_symlinked_control_dir_is_neither_written_nor_emptied(store, tmp_path, outside):
    (outside / "00000000000000000001-abcd0123.json").write_text(json.dumps(REQUEST))
    before = sorted(p.name for p in outside.iterdir())
    record, lock = new_job(store, tmp_path)
    inbox = store.job_dir(record.id) / "control"  # release 0.1.0's place
    inbox.symlink_to(outside)
    requests, problems = take_requests(store.job_dir(record.id))  # the supervisor's side
    assert requests == [] and len(problems) == 1 and "moved" in problems[0]
    assert sorted(p.name for p in outside.iterdir()) == before  # nothing read-and-deleted
    assert not inbox.is_symlink()
    # Today's place, the job's inbox: a link as its directory or its log, a FIFO as its log.
    owner = store.root / "owners" / f"job-{record.id}"
    for plant in ("dir", "log", "fifo"):
        owner.parent.mkdir(exist_ok=True)
        if plant == "dir":
            owner.symlink_to(outside)
        else:
            owner.mkdir(exist_ok=True)
            log = owner / "events.jsonl"
            log.symlink_to(outside / "precious.txt") if plant == "log" else os.mkfifo(log)
        with pytest.raises(StoreError):
            post_request(store.job_dir(record.id), "steer", "hi")
        requests, problems = take_requests(store.job_dir(record.id))
        assert requests == [] and len(problems) == 1 and "moved" in problems[0], problems
        assert sorted(p.name for p in outside.iterdir()) == before
        assert not owner.is_symlink() and not (owner / "events.jsonl").exists()
        post_request(store.job_dir(record.id), "steer", plant)  # the inbox works again
        assert [r.message for r in take_requests(store.job_dir(record.id))[0]] == [plant]
        shutil.rmtree(owner)
    lock.release()


def test_a_symlinked_inbox_or_owner_dir_is_never_followed(store, tmp_path, outside):
    """The notice goes to the owner's inbox (notices.py): a link planted as its events file
    or as the owner's directory is refused, never written through, and never raised into
    the supervisor (R-E5)."""
    record, lock = new_job(store, tmp_path)
    owner_dir = store.root / "owners" / TEST_OWNER
    owner_dir.mkdir(parents=True)
    (owner_dir / "events.jsonl").symlink_to(outside / "precious.txt")
    owner_news.retell(store.root, record.id)
    assert untouched(outside)
    assert (owner_dir / "events.jsonl").is_symlink()  # left for a person to look at
    other, other_lock = new_job(store, tmp_path)
    (owner_dir / "events.jsonl").unlink()
    shutil.rmtree(owner_dir)  # its lock and cursor files
    owner_dir.symlink_to(outside)
    owner_news.retell(store.root, other.id)  # refused, logged, not raised
    assert untouched(outside)
    lock.release()
    other_lock.release()


def test_a_symlinked_wave1_ready_dir_is_named_and_nothing_behind_it_is_touched(
    store, tmp_path, outside
):
    """Wave 1's `ready/` is migrated by prune; planted as a symlink, it is one warning and
    neither it nor the files it points at are deleted or read as notices."""
    from specialists.events.notices import prune

    record, lock = new_job(store, tmp_path)
    lock.release()
    (outside / record.id).write_text("not a marker")
    (store.root / "ready").symlink_to(outside)
    problems = prune(store.root)
    assert problems == [f"{store.root / 'ready'} is not a directory; remove it"]
    assert (outside / record.id).read_text() == "not a marker"
    assert (store.root / "ready").is_symlink()


def test_a_planted_lock_symlink_is_not_followed(store, tmp_path, outside):
    """The job is locked on its directory, so there is no lock file to redirect."""
    record, lock = new_job(store, tmp_path)
    lock.release()
    (store.job_dir(record.id) / "lock").symlink_to(outside / "created-by-lock")
    st = store.read_status(record.id)
    st.status, st.supervisor_pid = "running", 2**22 + 12345  # no such process
    JobWriter(store, record.id).write_status(st)
    assert current_status(store, record.id).status == "error"  # recovered under the lock
    assert untouched(outside)


def test_a_symlinked_events_file_is_moved_aside_not_appended(store, tmp_path, outside):
    record, lock = new_job(store, tmp_path)
    events = store.events_path(record.id)
    events.unlink()
    events.symlink_to(outside / "precious.txt")
    writer = JobWriter(store, record.id)
    writer.append_event("text")
    assert untouched(outside)
    kinds = [(e["event"], e.get("message", "")) for e in store.read_events(record.id)]
    assert kinds[0][0] == "notice" and "moved aside" in kinds[0][1]
    assert kinds[1][0] == "text"
    lock.release()


def test_a_symlinked_job_dir_is_not_a_job(store, tmp_path, outside):
    store.ensure_dirs()
    (store.jobs_dir / "0badc0de").symlink_to(outside)
    (outside / "status.json").write_text(
        json.dumps({"id": "0badc0de", "specialist": "x", "status": "done"})
    )
    assert store.list_ids() == []
    assert overview(store) == ([], [], [])
    assert collect(store, days=0).removed == []
    assert (outside / "status.json").exists()


def test_a_stray_result_keeps_the_answer(store, tmp_path):
    """A result.txt that is already there (planted, or a directory) neither kills the
    supervisor nor loses the answer: it is moved aside and reported."""
    for stray in ("file", "directory", "symlink"):
        record, lock, sup, thread = start(
            store, tmp_path, [Activity("thinking"), 0.3, RunFinished(text="the answer")]
        )
        path = store.job_dir(record.id) / "result.txt"
        if stray == "file":
            path.write_text("planted")
        elif stray == "directory":
            path.mkdir()
        else:
            path.symlink_to("/etc/hostname")
        status, events = finish(store, record, lock, sup, thread)
        assert status.status == "done", (stray, status.error)
        assert store.read_result(record.id) == "the answer"
        assert any("result.txt" in n for n in notices(events))
        assert events[-1]["event"] == "done"


def test_a_planted_temp_file_link_does_not_redirect_an_atomic_write(tmp_path, outside):
    target = tmp_path / "status.json"
    tmp = tmp_path / f".status.json.{os.getpid()}.{threading.get_ident()}.tmp"
    tmp.symlink_to(outside / "precious.txt")
    write_atomic(target, b"{}")
    assert target.read_bytes() == b"{}" and untouched(outside)


def test_a_symlinked_answers_dir_is_moved_aside(store, tmp_path, outside):
    record, lock = new_job(store, tmp_path)
    (store.job_dir(record.id) / "answers").symlink_to(outside)
    JobWriter(store, record.id).write_answer(1, "first answer")
    assert untouched(outside)
    assert store.latest_answer(record.id) == "first answer"
    lock.release()


def test_a_request_the_supervisor_would_refuse_is_refused_when_sent(store, tmp_path):
    from specialists.base.errors import UserError

    record, lock = new_job(store, tmp_path)
    with pytest.raises(UserError, match="not valid UTF-8"):
        post_request(store.job_dir(record.id), "steer", "bad \ud800 text")
    with pytest.raises(UserError, match="too long"):
        post_request(store.job_dir(record.id), "steer", "x" * 2_000_000)
    assert take_requests(store.job_dir(record.id)) == ([], [])
    lock.release()
