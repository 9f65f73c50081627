"""The fleet read model behind `top` and `web`: incremental reads, damaged files, the tree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specialists.fronts.fleet.feed import FeedTail, ended
from specialists.fronts.fleet.jobsource import MAX_STATUS_BYTES, JobSource
from specialists.fronts.fleet.model import Fleet, job_fleet
from specialists.fronts.fleet.rows import Row, printable
from specialists.fronts.fleet.tree import MAX_DEPTH, build_tree
from specialists.store.jobs import JobLock, JobStore
from specialists.store.news import NEWS
from tests.support.fleet import BASE_MS, append_events, fill_fleet, write_status


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    return JobStore(tmp_path / ".specialists", news=NEWS)


def rows_by_id(source: JobSource) -> dict[str, Row]:
    return {row.job_id or row.key: row for row in source.rows()}


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_refresh_reads_only_what_changed(store):
    """After the first refresh, unchanged files are not parsed again; finished jobs never are,
    even on the health pass; a changed active job is read once."""
    clock = FakeClock()
    fill_fleet(store.jobs_dir, 200, active=3)
    source = JobSource(store, clock=clock)
    assert source.refresh() is True
    assert source.reads == 200
    assert source.refresh() is False
    assert source.reads == 200
    clock.now += 5  # health pass: the 3 active jobs are re-read and checked, no others
    source.refresh()
    assert source.reads == 203
    running = [r for r in source.rows() if r.active]
    assert len(running) == 3
    write_status(store.jobs_dir, running[0].job_id, status="running", current_tool="read(x)")
    assert source.refresh() is True
    assert source.reads == 204
    assert rows_by_id(source)[running[0].job_id].activity == "read(x)"


def test_rows_carry_tokens_cost_attention_and_parent(store):
    write_status(
        store.jobs_dir,
        "0000000a",
        status="running",
        current_tool="bash(ls)",
        tokens={"input": 10, "cache_read": 5, "output": 7},
        cost_usd=0.25,
        needs_attention="no output for 5m\x1b[31m",
        stalled=True,
        keep_alive=True,
    )
    write_status(store.jobs_dir, "0000000b", status="done", parent_id="0000000a")
    source = JobSource(store)
    source.refresh()
    a, b = rows_by_id(source)["0000000a"], rows_by_id(source)["0000000b"]
    assert (a.tokens_in, a.tokens_out, a.cost_usd) == (15, 7, 0.25)
    assert a.activity == "bash(ls)" and a.keep_alive
    assert a.attention == "no output for 5m\\e[31m"  # the escape shown, not obeyed
    assert a.flags() == ("attention", "stalled")
    assert b.parent == "job:0000000a" and b.flags() == ()


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "JSON object"),
        (b'{"id": "x"}', "'specialist' is missing"),
        (b'{"id": "x", "specialist": "s", "tokens": {"input": "many"}}', "'tokens'"),
        (b'{"id": "x", "specialist": "s", "started_at_ms": "noon"}', "started_at_ms"),
        (b'{"id": "x", "specialist": "s", "elapsed_s": 1e999}', "finite"),
        (b'{"id": "x", "specialist": "s", "status": "exploded"}', "'status' should be one of"),
        (b'{"id": "x", "specialist": 5}', "'specialist' should be a string"),
        (b'{"id": "x", "specialist": "s", "schema": 99}', "newer"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ],
)
def test_a_damaged_status_is_one_damaged_row_and_the_rest_render(store, content, reason):
    fill_fleet(store.jobs_dir, 20, active=2)
    bad = store.jobs_dir / "deadbeef"
    bad.mkdir()
    (bad / "status.json").write_bytes(content)
    source = JobSource(store)
    source.refresh()
    rows = rows_by_id(source)
    assert len(rows) == 21
    assert rows["deadbeef"].kind == "damaged" and rows["deadbeef"].status == "damaged"
    assert reason in rows["deadbeef"].activity
    assert sum(1 for r in rows.values() if r.kind == "job") == 20


def test_planted_files_never_hang_or_escape(store, tmp_path):
    """A FIFO, a symlink to a secret, a directory and a huge file as status.json: each is a
    damaged row; the FIFO is never opened for a blocking read."""
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"id": "x", "specialist": "stolen"}))
    for job_id in ("00000001", "00000002", "00000003", "00000004"):
        (store.jobs_dir / job_id).mkdir(parents=True)
    os.mkfifo(store.jobs_dir / "00000001" / "status.json")
    (store.jobs_dir / "00000002" / "status.json").symlink_to(secret)
    (store.jobs_dir / "00000003" / "status.json").mkdir()
    big = b'{"id": "x", "specialist": "' + b"a" * MAX_STATUS_BYTES + b'"}'
    (store.jobs_dir / "00000004" / "status.json").write_bytes(big)
    source = JobSource(store)
    source.refresh()
    rows = rows_by_id(source)
    assert "not a regular file" in rows["00000001"].activity
    assert "symbolic link" in rows["00000002"].activity
    assert "not a regular file" in rows["00000003"].activity
    assert "too large" in rows["00000004"].activity
    assert all(r.title != "stolen" for r in rows.values())


def test_job_dir_without_status(store):
    """Being created (its lock held) shows as starting; abandoned shows as never started."""
    clock = FakeClock()
    held = store.jobs_dir / "0000000c"
    held.mkdir(parents=True)
    lock = JobLock(held)
    assert lock.try_acquire()
    (store.jobs_dir / "0000000d").mkdir()
    old = time.time() - 120  # past the grace a launch in progress is given
    os.utime(store.jobs_dir / "0000000d", (old, old))
    source = JobSource(store, clock=clock)
    source.refresh()
    rows = rows_by_id(source)
    assert rows["0000000c"].status == "starting"
    assert rows["0000000d"].status == "error" and "never started" in rows["0000000d"].activity
    lock.release()


def test_gc_removes_rows_and_new_jobs_appear(store):
    ids = fill_fleet(store.jobs_dir, 5, active=1)
    source = JobSource(store)
    source.refresh()
    (store.jobs_dir / ids[0] / "status.json").unlink()
    (store.jobs_dir / ids[0]).rmdir()
    write_status(store.jobs_dir, "abcdef01", status="starting")
    assert source.refresh() is True
    assert set(rows_by_id(source)) == (set(ids) - {ids[0]}) | {"abcdef01"}


def _row(key: str, parent: str | None = None, status: str = "done", start: int = 0) -> Row:
    return Row(key=key, kind="job", title=key, status=status, parent=parent, started_at_ms=start)


def test_tree_orders_active_first_then_recent_children_in_start_order():
    rows = [
        _row("old", start=1),
        _row("new", start=5),
        _row("busy", start=2),
        _row("busy-child-2", parent="busy", status="running", start=4),
        _row("busy-child-1", parent="busy", start=3),
        _row("orphan", parent="gone", start=0),
    ]
    lines = build_tree(rows)
    assert [(ln.row.key, ln.prefix) for ln in lines] == [
        ("busy", ""),
        ("busy-child-1", "├─ "),
        ("busy-child-2", "└─ "),
        ("new", ""),
        ("old", ""),
        ("orphan", ""),
    ]
    assert [ln.row.key for ln in build_tree(rows, active_only=True)] == ["busy", "busy-child-2"]


def test_tree_guides_for_nested_rows():
    rows = [
        _row("a", start=1),
        _row("b", parent="a", start=2),
        _row("c", parent="b", start=3),
        _row("d", parent="a", start=4),
    ]
    assert [ln.prefix + ln.row.key for ln in build_tree(rows)] == ["a", "├─ b", "│  └─ c", "└─ d"]


def test_tree_survives_parent_loops_and_long_chains():
    loop = [_row("x", parent="y"), _row("y", parent="x"), _row("z", parent="z")]
    assert sorted(ln.row.key for ln in build_tree(loop)) == ["x", "y", "z"]
    chain = [_row("r0")] + [_row(f"r{i}", parent=f"r{i - 1}", start=i) for i in range(1, 3000)]
    lines = build_tree(chain)
    assert len(lines) == 3000 and max(ln.depth for ln in lines) == MAX_DEPTH


def test_fleet_totals_tree_cache_and_descendants(store):
    fill_fleet(store.jobs_dir, 30, active=2)
    fleet = job_fleet(store)
    fleet.refresh()
    totals = fleet.totals()
    assert (totals.active, totals.finished, totals.damaged) == (2, 28, 0)
    assert totals.cost_usd == round(sum(r.cost_usd for r in fleet.rows.values()), 6)
    assert fleet.tree() is fleet.tree()  # cached until something changes
    # every tenth job continues the one before it
    assert [r.job_id for r in fleet.descendants("job:00000009")] == ["00000009", "0000000a"]
    assert fleet.descendants("job:ffffffff") == []


def test_fleet_merges_sources():
    class Timers:
        def refresh(self) -> bool:
            return True

        def rows(self) -> list[Row]:
            return [_row("timer:1", parent="job:a")]

    class Jobs(Timers):
        def rows(self) -> list[Row]:
            return [_row("job:a")]

    fleet = Fleet([Jobs(), Timers()])
    fleet.refresh()
    assert [ln.prefix + ln.row.key for ln in fleet.tree()] == ["job:a", "└─ timer:1"]


def test_printable_shows_control_characters_as_escapes():
    assert printable("a\x1b[2Jb\x07c\nd\x9be") == "a\\e[2Jb\\x07c d\\x9be"
    assert printable(None) == ""


def test_feed_tail_follows_by_offset_and_keeps_partial_lines(tmp_path):
    job = tmp_path / "job"
    job.mkdir()
    tail = FeedTail(job / "events.jsonl")
    assert tail.poll() == []  # no file yet
    append_events(job, {"event": "starting"}, {"event": "text"})
    assert [e["seq"] for e in tail.poll()] == [1, 2]
    with (job / "events.jsonl").open("ab") as f:
        f.write(b'{"seq": 3, "event": "do')
    assert tail.poll() == []
    with (job / "events.jsonl").open("ab") as f:
        f.write(b'ne"}\n')
    batch = tail.poll()
    assert [e["seq"] for e in batch] == [3] and ended(batch)


def test_feed_tail_starts_near_the_end_of_a_big_file(tmp_path):
    job = tmp_path / "job"
    job.mkdir()
    append_events(job, *({"event": "text", "text": "x" * 200} for _ in range(5000)))
    tail = FeedTail(job / "events.jsonl", tail_bytes=10_000)
    first = tail.poll()
    assert tail.skipped and 0 < len(first) < 60 and first[-1]["seq"] == 5000
    (job / "events.jsonl").write_bytes(b'{"seq": 1, "event": "starting"}\n')  # replaced
    assert [e["event"] for e in tail.poll()] == ["starting"]


def test_clock_fixed_ms_is_used_by_fill_fleet(store):
    ids = fill_fleet(store.jobs_dir, 3, active=1)
    source = JobSource(store)
    source.refresh()
    assert rows_by_id(source)[ids[-1]].started_at_ms == BASE_MS - 60_000


def test_pending_timers_are_rows_under_their_owner(store):
    """A job's timer sits under the job; a session's timer is a root; cancelled or fired ones
    go; a damaged timers file skips its bad lines; an unchanged file is not folded again."""
    from specialists.events.model import EventSource
    from specialists.events.timers import TimerStore
    from specialists.fronts.fleet.timersource import TimerSource

    write_status(store.jobs_dir, "0000000a", status="waiting", keep_alive=True)
    job_timers = TimerStore(store.root, "job-0000000a")
    first = job_timers.set(
        BASE_MS + 60_000, now_ms=BASE_MS, note="check CI", source=EventSource("sleep")
    )
    TimerStore(store.root, "claude-s1").set(
        BASE_MS + 5_000, now_ms=BASE_MS, source=EventSource("sleep_until")
    )
    fleet = job_fleet(store)
    fleet.refresh()
    lines = [(ln.prefix, ln.row.key) for ln in fleet.tree()]
    assert ("└─ ", f"timer:job-0000000a:{first.id}") in lines
    assert ("", lines[-1][1]) == lines[-1] and lines[-1][1].startswith("timer:claude-s1:")
    row = fleet.rows[f"timer:job-0000000a:{first.id}"]
    assert row.status == "pending" and "check CI" in row.activity and row.elapsed_s == 60.0
    assert fleet.totals().timers == 2 and fleet.totals().finished == 0
    timers = fleet.sources[1]
    assert isinstance(timers, TimerSource)
    assert timers.refresh() is False  # nothing changed: nothing folded
    job_timers.cancel(first.id, now_ms=BASE_MS + 1)
    with (store.root / "owners" / "claude-s1" / "timers.jsonl").open("ab") as f:
        f.write(b"{not json\n")
    fleet.refresh()
    assert [r.key.split(":")[1] for r in fleet.rows.values() if r.kind == "timer"] == ["claude-s1"]
