"""One damaged file never breaks the project (issue 7 item 3).

Every record read from disk (job.json, status.json, events lines, control requests, the
finished-jobs cache) is checked field by field. A bad one is reported once, naming the file
and the field and what was expected, and skipped; everything else keeps working. Each case
plants one kind of damage beside healthy jobs and runs the real commands in-process.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from specialists.fronts.cli.main import main
from specialists.store import index
from specialists.store.fields import EMPTY
from specialists.store.gc import collect
from specialists.store.joblog import read_event_lines
from specialists.store.jobs import JobStore
from specialists.store.news import NEWS
from specialists.store.paths import state_dir
from specialists.store.records import JobRecord, JobStatus
from specialists.store.view import all_statuses, overview
from specialists.store.writer import JobWriter
from tests.support.jobs import echo_project, new_job

pytestmark = pytest.mark.timeout(60)  # a regression here hangs (FIFO) or eats memory

DEEP = "[" * 100_000 + "]" * 100_000
HUGE_INT = "1" + "0" * 5000  # past Python's 4,300-digit limit for int()


@pytest.fixture
def root() -> Path:
    return echo_project()


@pytest.fixture
def store(root: Path) -> JobStore:
    return JobStore(state_dir(root), news=NEWS)


def finished(store: JobStore, cwd: Path, state: str = "done") -> str:
    record, lock = new_job(store, cwd, specialist="echo")
    writer = JobWriter(store, record.id)
    status = JobStatus(id=record.id, specialist="echo", status=state, started_at_ms=1000)
    writer.write_status(status)
    writer.append_event(state)
    writer.close()
    lock.release()
    return record.id


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def _status_text(job_id: str, **changes: object) -> str:
    data = JobStatus(id=job_id, specialist="echo", status="done").to_dict()
    data.update(changes)
    return json.dumps(data)


# Each damage: (name, how to plant it in status.json, words the report must contain)
STATUS_DAMAGE = {
    "wrong type": (lambda p, i: p.write_text(_status_text(i, pid="abc")), "'pid'"),
    "64-bit overflow": (lambda p, i: p.write_text(_status_text(i, pid=10**30)), "'pid'"),
    "float 1e999": (
        lambda p, i: p.write_text(_status_text(i)[:-1] + ', "elapsed_s": 1e999}'),
        "'elapsed_s'",
    ),
    "int over 4300 digits": (
        lambda p, i: p.write_text(_status_text(i)[:-1] + f', "pid": {HUGE_INT}}}'),
        "not valid JSON",
    ),
    "nested 100,000 deep": (
        lambda p, i: p.write_text(_status_text(i)[:-1] + f', "x": {DEEP}}}'),
        "nested too deeply",
    ),
    "huge file": (lambda p, i: p.write_text(_status_text(i, error="x" * 2_000_000)), "MiB"),
    "symlink to /dev/zero": (lambda p, i: (p.unlink(), p.symlink_to("/dev/zero")), "symbolic"),
    "FIFO": (lambda p, i: (p.unlink(), os.mkfifo(p)), "FIFO"),
    "lone surrogate": (
        lambda p, i: p.write_text(_status_text(i)[:-1] + ', "error": "\\ud800"}'),
        "not valid Unicode",
    ),
    "unknown state": (lambda p, i: p.write_text(_status_text(i, status="zombie")), "'status'"),
    "another job's id": (lambda p, i: p.write_text(_status_text("0badc0de")), "'id'"),
    "not an object": (lambda p, i: p.write_text("[1, 2]"), "JSON object"),
}


@pytest.mark.parametrize("damage", list(STATUS_DAMAGE))
def test_one_damaged_status_is_reported_once_and_the_rest_still_works(capsys, store, root, damage):
    plant, words = STATUS_DAMAGE[damage]
    good = [finished(store, root), finished(store, root, "error")]
    bad = finished(store, root)
    path = store.job_dir(bad) / "status.json"
    plant(path, bad)
    (store.jobs_dir / index.INDEX_NAME).unlink(missing_ok=True)  # nothing cached yet

    code, out, err = cli(capsys, "status", "--json")
    assert code == 0
    listed = json.loads(out)
    assert sorted(e["id"] for e in listed["finished"]) == sorted(good)
    warnings = err.strip().splitlines()
    assert len(warnings) == 1 and warnings[0].startswith("warning: "), err
    assert str(path) in warnings[0] and words in warnings[0], warnings[0]

    code, _, err = cli(capsys, "status", "--job", bad)  # the job itself: one clear line
    assert code == 4 and err.startswith("error: ") and words in err
    assert sorted(s.id for s in all_statuses(store)[0]) == sorted(good)
    assert set(collect(store, days=0).removed) == set(good)
    assert store.list_ids() == [bad]  # damaged: kept for a person to look at, never deleted


@pytest.mark.parametrize(
    "line",
    [
        b'{"seq": "3", "ts": 1, "event": "text"}',
        b'{"seq": 3.5, "ts": 1, "event": "text"}',
        b'{"seq": 3, "ts": 1e999, "event": "text"}',
        b'{"seq": ' + HUGE_INT.encode() + b', "ts": 1, "event": "text"}',
        b'{"seq": 3, "ts": 1, "event": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b'{"seq": 3, "ts": 1, "event": ["text"]}',
        b"x" * 200_000,
        b"\xff\xfe not utf-8",
        b"[]",
    ],
    ids=[
        "seq str",
        "seq float",
        "ts inf",
        "seq huge",
        "deep",
        "event list",
        "long",
        "bytes",
        "list",
    ],
)
def test_a_bad_event_line_is_skipped_and_reported_once(capsys, store, root, line):
    job_id = finished(store, root)
    path = store.events_path(job_id)
    with open(path, "ab") as f:
        f.write(line + b"\n")
    JobWriter(store, job_id).append_event("text")  # a good line after the bad one
    problems: list[str] = []
    events, end = read_event_lines(path, 0, problems=problems)
    assert [e["seq"] for e in events] == [1, 2]
    assert len(problems) == 1 and str(path) in problems[0]
    assert read_event_lines(path, end, problems=problems) == ([], end)  # not again

    code, out, err = cli(capsys, "feed", "--job", job_id)
    assert code == 0
    assert len(out.strip().splitlines()) == 2
    assert err.count("warning: ") == 1


def test_events_file_that_is_a_symlink_to_dev_zero_is_refused_not_read(capsys, store, root):
    job_id = finished(store, root)
    path = store.events_path(job_id)
    path.unlink()
    path.symlink_to("/dev/zero")
    code, _, err = cli(capsys, "feed", "--job", job_id)
    assert code == 4 and "symbolic link" in err
    code, out, _ = cli(capsys, "status")
    assert code == 0 and job_id in out


def test_reads_are_capped_per_call(store, root, tmp_path):
    job_id = finished(store, root)
    path = store.events_path(job_id)
    writer = JobWriter(store, job_id)
    for _ in range(300):
        writer.append_event("text", note="y" * 1000)
    events, offset = read_event_lines(path, 0, limit=64 * 1024)
    assert 0 < len(events) < 100 and offset < path.stat().st_size
    rest, end = read_event_lines(path, offset)
    assert len(events) + len(rest) == 301 and end == path.stat().st_size


@pytest.mark.parametrize(
    ("plant", "reported"),
    [
        (lambda p: p.write_text(_status_text("00000001")), False),  # another version's
        (lambda p: p.write_text(DEEP), True),
        (
            lambda p: p.write_text(
                '{"v": 3, "jobs": [[12, "done", "x", 1, 1.0, null, null, null, 0, 0.0, []]]}'
            ),
            True,
        ),
        (
            lambda p: p.write_text(
                '{"v": 3, "jobs": [["00000001", "done", "", 1, 1e999, null, null, null, 0, 0.0,'
                " []]]}"
            ),
            True,
        ),
        (lambda p: (p.unlink(missing_ok=True), p.symlink_to("/dev/zero")), True),
    ],
    ids=["wrong shape", "deep", "bad id", "bad float", "dev zero"],
)
def test_a_damaged_finished_cache_is_reported_and_rebuilt(capsys, store, root, plant, reported):
    ids = sorted(finished(store, root) for _ in range(2))
    overview(store)  # builds the cache
    plant(store.jobs_dir / index.INDEX_NAME)
    _, listed, problems = overview(store)
    assert sorted(e.id for e in listed) == ids
    assert bool(problems) == reported and all(index.INDEX_NAME in p for p in problems)
    code, out, _ = cli(capsys, "status", "--json")
    assert code == 0 and sorted(e["id"] for e in json.loads(out)["finished"]) == ids
    assert overview(store)[2] == []  # rebuilt: reported once, not on every run


def test_a_cache_row_cannot_make_gc_delete_a_live_job(store, root):
    """The cache is derived data anyone can write: gc re-reads a job before deleting it."""
    record, lock = new_job(store, root, specialist="echo")  # live: we hold its lock
    row = [record.id, "done", "echo", 1000, 1.0, None]
    (store.jobs_dir / index.INDEX_NAME).write_text(json.dumps({"v": 1, "jobs": [row]}))
    assert collect(store, days=0).removed == []
    assert record.id in store.list_ids()
    active, listed, _ = overview(store)  # and the wrong row is gone from the cache
    assert [s.id for s in active] == [record.id] and listed == []
    lock.release()


def test_a_damaged_job_json_is_one_clear_line(capsys, store, root):
    job_id = finished(store, root)
    path = store.job_dir(job_id) / "job.json"
    data = json.loads(path.read_text())
    data["timeout_ms"] = "soon"
    path.write_text(json.dumps(data))
    code, _, err = cli(capsys, "resume", job_id, "--prompt", "again")
    assert code == 4
    assert "job.json" in err and "'timeout_ms'" in err and "an integer or null" in err


def test_records_declare_each_field_once():
    """One declaration per field drives the constructor, the defaults and the check."""
    for cls in (JobRecord, JobStatus):
        own = [n for n in cls.__annotations__ if not n.startswith("_")]
        assert [f.name for f in cls._fields] == own
        for f in cls._fields:
            declared = cls.__dict__.get(f.name, None)
            if declared is not None:
                assert declared is f.default or (declared is EMPTY and f.fresh)
    a, b = JobStatus(id="a", specialist="s"), JobStatus(id="b", specialist="s")
    a.tokens["input"] = 1
    assert b.tokens == {}  # EMPTY is a fresh dict per instance
    with pytest.raises(TypeError, match="no field"):
        JobStatus(id="a", specialist="s", colour="red")


def test_feed_of_all_jobs_keeps_going_past_one_planted_events_file(capsys, store, root):
    from specialists.store.liveness import process_start_time

    good, bad = finished(store, root), finished(store, root)
    for job_id in (good, bad):  # running, under a live supervisor (this process)
        st = store.read_status(job_id)
        st.status, st.supervisor_pid = "running", os.getpid()
        st.supervisor_start_time = process_start_time(os.getpid())
        JobWriter(store, job_id).write_status(st)
    path = store.events_path(bad)
    path.unlink()
    os.mkfifo(path)
    code, out, err = cli(capsys, "feed")
    assert code == 0
    assert good in out and err.count("warning: ") == 1 and "FIFO" in err


def test_a_torn_last_line_stays_alone(store, root):
    """A line cut short (a crash mid-write elsewhere) is not glued to the next one."""
    job_id = finished(store, root)
    with open(store.events_path(job_id), "ab") as f:
        f.write(b'{"seq": 2, "ts": 1, "ev')
    JobWriter(store, job_id).append_event("text")
    problems: list[str] = []
    events, _ = read_event_lines(store.events_path(job_id), 0, problems=problems)
    assert [(e["seq"], e["event"]) for e in events] == [(1, "done"), (2, "text")]
    assert len(problems) == 1


@pytest.mark.parametrize("plant", ["symlink to /dev/zero", "FIFO"])
def test_a_planted_result_is_one_clear_line_not_a_hang(capsys, store, root, plant):
    job_id = finished(store, root)
    path = store.job_dir(job_id) / "result.txt"
    if plant == "FIFO":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    code, _, err = cli(capsys, "result", job_id)
    assert code == 4 and err.startswith("error: ") and "result.txt" in err
    other = finished(store, root)
    (store.job_dir(other) / "result.txt").write_text("fine")
    assert cli(capsys, "result", other)[:2] == (0, "fine\n")
