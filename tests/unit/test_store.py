"""The job store: ids, atomic status, whole-line events, result once, recovery, gc."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specialists.base.errors import Bug, ConfigError, NotFound, StoreError, UserError
from specialists.events import notices
from specialists.store import atomic
from specialists.store.control import post_request
from specialists.store.gc import collect
from specialists.store.ids import check_job_ref, is_job_id, new_job_id
from specialists.store.jobs import JobStore, read_event_lines
from specialists.store.liveness import is_alive, process_start_time
from specialists.store.news import NEWS
from specialists.store.records import JobStatus
from specialists.store.recovery import recover_if_dead
from specialists.store.writer import JobWriter
from tests.support.jobs import new_job, take_requests


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    return JobStore(tmp_path / ".specialists", news=NEWS)


def test_ids_are_strict():
    for _ in range(50):
        assert is_job_id(new_job_id())
    for bad in ["../etc", "ab/cd", "", "ABCDEFGH0", "x" * 9, "12 34", "..", "abc$"]:
        with pytest.raises(UserError):
            check_job_ref(bad)
    assert check_job_ref(" AB12 ") == "ab12"


def test_resolve_prefix_unique_ambiguous_missing(store):
    ids = []
    for _ in range(3):
        job_id, _ = store.create_job_dir()
        ids.append(job_id)
    assert store.resolve(ids[0]) == ids[0]
    assert store.resolve(ids[1][:6]) == ids[1] or len({i[:6] for i in ids}) < 3
    (store.jobs_dir / "aaaa0001").mkdir()
    (store.jobs_dir / "aaaa0002").mkdir()
    with pytest.raises(UserError, match="ambiguous"):
        store.resolve("aaaa")
    with pytest.raises(NotFound):
        store.resolve("ffffffff" if "ffffffff" not in ids else "fffffffe")
    with pytest.raises(UserError, match="invalid job id"):
        store.resolve("../../etc/passwd")


def test_create_job_dir_is_exclusive(store, monkeypatch):
    (store.jobs_dir).mkdir(parents=True)
    (store.jobs_dir / "00000000").mkdir()
    ids = iter(["00000000", "00000001"])
    monkeypatch.setattr("specialists.store.jobs.new_job_id", lambda: next(ids))
    assert store.create_job_dir()[0] == "00000001"


def test_event_lines_are_whole_and_partial_tail_is_left(store, tmp_path):
    record, lock = new_job(store, tmp_path)
    writer = JobWriter(store, record.id)
    writer.append_event("thinking")
    writer.append_event("toolcall", tool="bash", args="x" * 10_000)
    path = store.events_path(record.id)
    with open(path, "ab") as f:
        f.write(b'{"seq": 3, "event": "te')  # a writer caught mid-line
    events, offset = read_event_lines(path, 0)
    assert [e["seq"] for e in events] == [1, 2]
    assert len(events[1]["args"]) < 2100  # clipped
    assert offset == path.stat().st_size - len(b'{"seq": 3, "event": "te')
    lock.release()


def test_writer_continues_seq_after_restart(store, tmp_path):
    record, lock = new_job(store, tmp_path)
    JobWriter(store, record.id).append_event("a")
    assert JobWriter(store, record.id).append_event("b")["seq"] == 2
    lock.release()


def test_result_written_once(store, tmp_path):
    record, lock = new_job(store, tmp_path)
    writer = JobWriter(store, record.id)
    writer.write_result("answer")
    with pytest.raises(Bug, match="twice"):
        writer.write_result("again")
    assert store.read_result(record.id) == "answer"
    lock.release()


def test_full_disk_leaves_status_whole(store, tmp_path, monkeypatch):
    record, lock = new_job(store, tmp_path)
    writer = JobWriter(store, record.id)
    before = store.read_status(record.id)
    assert before is not None

    def no_space(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "write", no_space)
    changed = JobStatus(id=record.id, specialist="tester", status="running")
    assert writer.write_status(changed) is False
    monkeypatch.undo()
    after = store.read_status(record.id)
    assert after == before
    leftovers = [p for p in store.job_dir(record.id).iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []
    lock.release()


def test_newer_schema_is_refused(store, tmp_path):
    record, lock = new_job(store, tmp_path)
    path = store.job_dir(record.id) / "status.json"
    data = json.loads(path.read_text())
    data["schema"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(StoreError, match="newer"):
        store.read_status(record.id)
    lock.release()


@settings(max_examples=20, deadline=None)
@given(st.lists(st.text(max_size=3000), min_size=5, max_size=40))
def test_concurrent_readers_never_see_torn_status(tmp_path_factory, errors):
    store = JobStore(tmp_path_factory.mktemp("p") / ".specialists", news=NEWS)
    record, lock = new_job(store, Path("/tmp"))
    writer = JobWriter(store, record.id)
    path = store.job_dir(record.id) / "status.json"
    stop = threading.Event()
    torn: list[bytes] = []

    def reader():
        while not stop.is_set():
            raw = path.read_bytes()
            try:
                json.loads(raw)
            except ValueError:
                torn.append(raw)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for text in errors:
        writer.write_status(JobStatus(id=record.id, specialist="t", error=text))
    stop.set()
    for t in threads:
        t.join()
    lock.release()
    assert torn == []


def test_control_requests_in_order_and_bad_files_reported(store, tmp_path):
    record, lock = new_job(store, tmp_path)
    job_dir = store.job_dir(record.id)
    a = post_request(job_dir, "steer", "one")
    inbox = store.root / "owners" / f"job-{record.id}" / "events.jsonl"
    with inbox.open("a") as f:  # a request the supervisor would refuse, between two good ones
        f.write(json.dumps({"kind": "control", "details": {"request": "zz", "control": "rm"}}))
        f.write("\n")
    b = post_request(job_dir, "follow_up", "two")
    requests, problems = take_requests(job_dir)
    assert [r.id for r in requests] == [a.id, b.id]
    assert [r.message for r in requests] == ["one", "two"]
    assert len(problems) == 1 and "ignored" in problems[0]
    assert take_requests(job_dir) == ([], [])
    # A 0.1.0 store's request files are read first (they are older), then deleted.
    (job_dir / "control").mkdir()
    (job_dir / "control" / "00000000000000000001-aa.json").write_text(
        json.dumps({"id": "aa", "kind": "stop", "message": "", "sent_at_ms": 1})
    )
    (job_dir / "control" / "99999999999999999999-zz.json").write_text("{not json")
    c = post_request(job_dir, "steer", "three")
    requests, problems = take_requests(job_dir)
    assert [r.id for r in requests] == ["aa", c.id]
    assert len(problems) == 1 and "ignored" in problems[0]
    assert take_requests(job_dir) == ([], [])
    assert [p.name for p in (job_dir / "control").iterdir()] == [
        ".99999999999999999999-zz.json.bad"
    ]
    lock.release()


def _dead_pid() -> tuple[int, int | None]:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    start = process_start_time(proc.pid)
    proc.wait()
    return proc.pid, start


def test_recovery_is_not_fooled_by_reused_pid(store, tmp_path):
    record, lock = new_job(store, tmp_path)
    lock.release()
    status = store.read_status(record.id)
    status.status = "running"
    status.supervisor_pid = os.getpid()  # alive, but not the process that started the job
    status.supervisor_start_time = (process_start_time(os.getpid()) or 0) - 1
    JobWriter(store, record.id).write_status(status)
    assert not is_alive(status.supervisor_pid, status.supervisor_start_time)
    assert recover_if_dead(store, record.id, status).status == "error"


def test_gc_removes_old_finished_keeps_active_and_recent(store, tmp_path, monkeypatch):
    ten_days_ago_ms = int((time.time() - 10 * 86400) * 1000)

    def job_in(state: str, started_at_ms: int, *, hold: bool = False) -> str:
        record, lock = new_job(store, tmp_path)
        if not hold:
            lock.release()
        st = store.read_status(record.id)
        st.status, st.started_at_ms, st.elapsed_s = state, started_at_ms, 5.0
        writer = JobWriter(store, record.id)
        writer.write_status(st)
        if state == "done":
            notices.retell(store.root, record.id)
        return record.id

    old = job_in("done", ten_days_ago_ms)
    recent = job_in("done", int(time.time() * 1000) - 60_000)
    active = job_in("running", ten_days_ago_ms, hold=True)  # a live supervisor holds it
    monkeypatch.setenv("SPECIALISTS_JOB_TTL_DAYS", "7")
    report = collect(store)
    assert report.removed == [old]
    assert report.kept_active == 1
    assert set(store.list_ids()) == {recent, active}
    assert collect(store).removed == []  # the index no longer lists it either
    assert collect(store, days=0).removed == [recent]


def test_a_job_dir_without_status_is_starting_while_locked_else_never_started(store):
    from specialists.store.jobs import JobLock
    from specialists.store.view import current_status

    job_id, job_dir = store.create_job_dir()
    assert current_status(store, job_id).status == "starting"  # fresh: a launch under way
    old = time.time() - 120
    os.utime(job_dir, (old, old))
    lock = JobLock(job_dir)
    assert lock.try_acquire()  # a slow launcher mid-creation
    assert current_status(store, job_id).status == "starting"
    lock.release()  # the launcher died before writing status.json
    st = current_status(store, job_id)
    assert st.status == "error" and st.error.startswith("the job was never started")
    assert store.read_status(job_id) == st  # recorded: status lists it, gc can remove it
    assert collect(store, days=0).removed == [job_id]


@pytest.mark.parametrize("value", ["-1", "0", "abc", "1e999", "nan", "-inf", "1e6", "7 days"])
def test_a_bad_ttl_is_refused_and_deletes_nothing(store, tmp_path, monkeypatch, value):
    """SPECIALISTS_JOB_TTL_DAYS=-1 used to delete every finished job on the next run; then
    it was warned about and ignored. Now it is refused: one line, exit 2."""
    record, lock = new_job(store, tmp_path)
    lock.release()
    st = store.read_status(record.id)
    st.status, st.started_at_ms = "done", 1000  # ended long ago
    JobWriter(store, record.id).write_status(st)
    monkeypatch.setenv("SPECIALISTS_JOB_TTL_DAYS", value)
    with pytest.raises(ConfigError) as refused:
        collect(store)
    assert refused.value.exit_code == 2
    assert refused.value.message.startswith(f"SPECIALISTS_JOB_TTL_DAYS={value!r} is not a number")
    assert store.list_ids() == [record.id]
    monkeypatch.setenv("SPECIALISTS_JOB_TTL_DAYS", "")  # empty: unset, the default (7 days)
    assert collect(store).removed == [record.id]


def test_clean_all_keep_and_dry_run_choose_among_finished_jobs_only(store, tmp_path):
    """`specialists clean` (the Node original's command): --all every finished job, --keep N
    all but the N newest, --dry-run removes nothing; an active job is never a candidate."""
    now = time.time()

    def job_in(state: str, ended_days_ago: float, *, hold: bool = False) -> str:
        record, lock = new_job(store, tmp_path)
        if not hold:
            lock.release()
        st = store.read_status(record.id)
        st.status, st.elapsed_s = state, 1.0
        st.started_at_ms = int((now - ended_days_ago * 86400 - 1) * 1000)
        (store.job_dir(record.id) / "result.txt").write_text("x" * 5000)
        JobWriter(store, record.id).write_status(st)
        return record.id

    old, mid, new = job_in("done", 9), job_in("error", 2), job_in("done", 0.01)
    active = job_in("running", 30, hold=True)
    dry = collect(store, every=True, dry_run=True, now=now)
    assert dry.removed == [new, mid, old] and dry.freed_bytes > 3 * 5000
    assert set(store.list_ids()) == {old, mid, new, active}  # nothing removed
    kept = collect(store, keep=2, now=now)
    assert kept.removed == [old] and set(store.list_ids()) == {mid, new, active}
    assert collect(store, keep=1, days=5, now=now).removed == []  # mid is 2 days old
    assert collect(store, every=True, keep=1, now=now).removed == [mid]
    assert collect(store, every=True, now=now).removed == [new]
    assert store.list_ids() == [active] and collect(store, every=True).kept_active == 1


def test_clean_refuses_bad_options_and_gc_is_its_older_name(tmp_path, capsys):
    from specialists.fronts.cli.main import main

    for argv, said in (
        (["clean", "--keep", "-1"], "--keep must be zero or more"),
        (["clean", "--all", "--days", "3"], "not allowed with argument"),
        (["clean", "--keep", "two"], "invalid int value"),
    ):
        capsys.readouterr()
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1, err
    assert main(["clean", "--dry-run"]) == 0
    assert "would remove 0 finished job(s) (0 B); nothing removed" in capsys.readouterr().out
    assert main(["gc", "--all"]) == 0
    assert "removed 0 finished job(s) (0 B freed)" in capsys.readouterr().out


def test_tree_bytes_does_not_follow_links_and_is_bounded(tmp_path):
    from specialists.store.gc import tree_bytes

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_bytes(b"x" * 100)
    big = tmp_path / "big"
    big.write_bytes(b"y" * 10_000_000)
    (tmp_path / "d" / "link").symlink_to(big)
    (tmp_path / "d" / "up").symlink_to(tmp_path, target_is_directory=True)
    counted = tree_bytes(tmp_path / "d")
    assert 100 <= counted < 10_000  # the links' own sizes, never their targets'
    for i in range(50):
        (tmp_path / "d" / f"n{i}").write_bytes(b"z")
    assert tree_bytes(tmp_path / "d", limit=10) < 200
