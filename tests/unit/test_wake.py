"""supervise/wake.py, pending.py, news.py: the wait/wake decisions, at-least-once delivery,
what counts as pending work, and the "job ended" event (pure, over temp files)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from specialists.base.errors import StoreError
from specialists.events.inbox import Inbox
from specialists.events.model import EventSource
from specialists.events.timers import TimerStore
from specialists.store.jobs import JobStore
from specialists.store.news import NEWS
from specialists.store.records import JobStatus
from specialists.supervise import news
from specialists.supervise.pending import Pending, pending_work
from specialists.supervise.wake import (
    YIELDED_WITH_NOTHING,
    End,
    Nudge,
    WaitForFollowUp,
    WaitForWork,
    WakeSituation,
    after_run,
    deliver,
    delivery_mode,
)
from tests.support.jobs import job_end, make_record, new_job

OWNER = "job-0123abcd"
SRC = EventSource("sleep", "call_1", {"seconds": 5})
NOW_MS = 1_800_000_000_000


NOTHING = Pending()


def situation(pending: Pending = NOTHING, **kw: object) -> WakeSituation:
    base: dict[str, object] = {
        "pending": pending,
        "answered": True,
        "yielded": False,
        "nudged": False,
        "keep_alive": False,
        "mode": "supervisor",
    }
    base.update(kw)
    return WakeSituation(**base)  # type: ignore[arg-type]


# --- decisions ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pending",
    [
        Pending(timers=1, next_due_ms=NOW_MS + 40_000),
        Pending(events=True),
        Pending(jobs=("1a2b3c4d",)),
    ],
    ids=["a timer", "events", "an owned job"],
)
def test_any_pending_work_keeps_the_job_waiting_and_says_why(pending: Pending) -> None:
    for answered, yielded in ((True, False), (False, True)):
        step = after_run(situation(pending, answered=answered, yielded=yielded), NOW_MS)
        assert isinstance(step, WaitForWork)
        assert step.why in ("1 timer due 08:00:40 UTC", "events in the inbox", "job 1a2b3c4d")


def test_nothing_pending_and_an_answer_ends_the_job_with_it() -> None:
    assert after_run(situation(), NOW_MS) == End("done")


def test_a_yield_with_nothing_pending_is_nudged_once_then_ends() -> None:
    assert after_run(situation(answered=False, yielded=True), NOW_MS) == Nudge()
    nudged = situation(answered=False, yielded=True, nudged=True)
    assert after_run(nudged, NOW_MS) == End("error", YIELDED_WITH_NOTHING)
    answered_before = situation(answered=True, yielded=True, nudged=True)
    assert after_run(answered_before, NOW_MS) == End("done")


def test_keep_alive_jobs_wait_for_a_follow_up_when_nothing_is_pending() -> None:
    assert after_run(situation(keep_alive=True), NOW_MS) == WaitForFollowUp()
    yielded = situation(keep_alive=True, answered=False, yielded=True)
    assert after_run(yielded, NOW_MS) == WaitForFollowUp()
    busy = situation(Pending(timers=2, next_due_ms=NOW_MS), keep_alive=True)
    assert after_run(busy, NOW_MS) == WaitForWork("2 timers due 08:00:00 UTC")


def test_a_runner_that_takes_no_message_between_runs_ends_with_its_run() -> None:
    busy = Pending(timers=1, next_due_ms=NOW_MS)
    assert after_run(situation(busy, mode="none"), NOW_MS) == End("done")
    assert after_run(situation(busy, mode="none", keep_alive=True), NOW_MS) == WaitForFollowUp()


def test_who_delivers(tmp_path: Path) -> None:
    pi_ext = make_record(tmp_path, runner="pi", runner_options={"specialists_extension": True})
    assert delivery_mode(pi_ext, True) == "agent"
    assert delivery_mode(make_record(tmp_path, runner="pi"), True) == "supervisor"
    assert delivery_mode(make_record(tmp_path, runner="native"), True) == "supervisor"
    assert delivery_mode(make_record(tmp_path, runner="command"), False) == "none"
    assert delivery_mode(make_record(tmp_path, runner="command"), True) == "none"
    assert delivery_mode(make_record(tmp_path, runner="proc"), True) == "none"


# --- delivery (R-E6) ------------------------------------------------------------------------


def emit(root: Path, body: str, seq: int, owner: str = OWNER) -> None:
    Inbox(root, owner).append("timer", SRC, body, source_id="tm-1", seq=seq)


def test_a_crash_between_take_and_acceptance_redelivers_the_same_events(tmp_path: Path) -> None:
    """The send fails (a process that died before acknowledging is the same: the cursor has
    not moved): the next delivery sends exactly those events again, once."""
    root = tmp_path / ".specialists"
    emit(root, "first", 1)
    emit(root, "second", 2)
    inbox = Inbox(root, OWNER)

    def crash(text: str) -> None:
        raise KeyboardInterrupt("the supervisor died here")

    with pytest.raises(KeyboardInterrupt):
        deliver(inbox, crash)
    sent: list[str] = []
    done = deliver(Inbox(root, OWNER), sent.append)
    assert done.ids == ("tm-1:timer:1", "tm-1:timer:2")
    assert sent[0].count("[specialists event] timer from sleep (call_1)") == 2
    assert "first" in sent[0] and "second" in sent[0]
    assert deliver(Inbox(root, OWNER), sent.append).ids == () and len(sent) == 1


def test_damaged_and_duplicate_lines_are_passed_over_so_a_waiter_never_spins(
    tmp_path: Path,
) -> None:
    root = tmp_path / ".specialists"
    emit(root, "one", 1)
    inbox = Inbox(root, OWNER)
    with open(inbox.events_path, "ab") as f:
        f.write(b"{not json\n")
        f.write(inbox.events_path.read_bytes().splitlines()[0] + b"\n")  # the same id again
    deliver(inbox, lambda text: None)
    with open(inbox.events_path, "ab") as f:
        f.write(b'{"id": 5}\n')
    sent: list[str] = []
    done = deliver(inbox, sent.append)
    assert sent == [] and done.ids == () and done.skipped == 1 and done.problems
    assert not inbox.has_pending()


# --- pending work ---------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    return JobStore(tmp_path / ".specialists", news=NEWS)


def set_status(store: JobStore, job_id: str, **fields: object) -> None:
    status = store.read_status(job_id)
    assert status is not None
    for key, value in fields.items():
        setattr(status, key, value)
    path = store.job_dir(job_id) / "status.json"
    path.write_text(json.dumps(status.to_dict()))


def test_pending_work_counts_timers_events_and_running_owned_jobs(
    store: JobStore, tmp_path: Path
) -> None:
    assert not pending_work(store, OWNER).any
    TimerStore(store.root, OWNER).set(NOW_MS + 5000, now_ms=NOW_MS, source=SRC)
    assert pending_work(store, OWNER) == Pending(timers=1, next_due_ms=NOW_MS + 5000)
    emit(store.root, "fired", 1)
    assert pending_work(store, OWNER).events

    child, lock = new_job(store, tmp_path, owner=[OWNER])
    other, other_lock = new_job(store, tmp_path, owner=["job-99999999"])
    try:
        set_status(store, child.id, status="running", supervisor_pid=os.getpid())
        set_status(store, other.id, status="running", supervisor_pid=os.getpid())
        assert pending_work(store, OWNER).jobs == (child.id,)
        set_status(store, child.id, status="waiting")  # answered, waits for its owner
        assert pending_work(store, OWNER).jobs == ()
    finally:
        lock.release()
        other_lock.release()


def test_an_owned_job_whose_supervisor_died_is_recorded_and_its_owners_told(
    store: JobStore, tmp_path: Path
) -> None:
    """Whoever recovers it (here the owner's wait for pending work) tells its owners, through
    the store's news, as its supervisor would have."""
    from specialists.store.news import NEWS

    store = JobStore(store.root, news=NEWS)
    child, lock = new_job(store, tmp_path, owner=[OWNER])
    lock.release()  # nobody holds it: its supervisor is gone
    set_status(store, child.id, status="running", supervisor_pid=2**22 + 12345)

    assert pending_work(store, OWNER).jobs == ()
    status = store.read_status(child.id)
    assert isinstance(status, JobStatus) and status.status == "error"
    (event,) = Inbox(store.root, OWNER).pending().events
    assert event.kind == "notice" and "supervisor crashed" in event.body
    # told once: a second telling is a no-op
    assert news.tell_recovered(store, status, close_timers=True) == []
    assert len(Inbox(store.root, OWNER).pending().events) == 1


def test_recovery_tells_the_end_before_it_writes_the_final_status(
    store: JobStore, tmp_path: Path
) -> None:
    """Like its supervisor, recovery tells the job's one end before the final status, so an
    owner that sees the job ended finds its event; a session owner gets the completion
    notice after it, a job owner only the teller's notice (with the answer's words), once."""
    from specialists.store.news import NEWS
    from specialists.store.recovery import CRASHED, record_end

    seen: list[tuple[str, str | None, int, int]] = []

    def count(root: Path, owner: str) -> int:
        inbox = Inbox(root, owner)
        return len(inbox.pending().events) if inbox.events_path.exists() else 0

    def on_disk(root: Path, status: JobStatus) -> None:
        written = JobStore(root, news=None).read_status(status.id)
        told = (count(root, OWNER), count(root, "claude-s1"))
        seen.append((status.status, written.status if written else None, *told))

    teller = NEWS.teller

    def spy(root: Path, status: JobStatus, record, *, told: bool) -> None:
        assert teller is not None and not told

        def recording() -> None:
            on_disk(root, status)  # the job owner told, its status still active
            record()
            on_disk(root, status)

        teller(root, status, recording, told=told)

    store = JobStore(store.root, news=NEWS)
    child, lock = new_job(store, tmp_path, owner=[OWNER, "claude-s1"])
    NEWS.teller = spy
    try:
        status = store.read_status(child.id)
        assert status is not None
        record_end(store, status, "error", CRASHED)
    finally:
        NEWS.teller = teller
        lock.release()
    # the job owner told, then the status written, then the session told, then the status
    # again (no longer `telling`)
    assert seen[:2] == [("error", "starting", 1, 0), ("error", "error", 1, 0)]
    assert seen[2:] == [("error", "error", 1, 1)] * 2
    assert store.read_status(child.id).telling is False  # type: ignore[union-attr]
    (event,) = Inbox(store.root, OWNER).pending().events
    assert event.id == f"job-{child.id}:notice:1" and event.body.startswith(f"Job {child.id}")
    (notice,) = Inbox(store.root, "claude-s1").pending().events
    assert notice.id == event.id and notice.body.startswith("Specialist 'tester' failed")


@pytest.mark.parametrize("dies", ["before its end event", "before its status"])
def test_a_crash_between_telling_and_recording_tells_every_owner_once(
    store: JobStore, tmp_path: Path, dies: str
) -> None:
    """Its supervisor tells the end, then dies before recording it: recovery tells it again
    with the same ids (every owner hears once), and the session hears after the status."""
    from specialists.store.news import NEWS
    from specialists.store.recovery import record_end
    from specialists.store.writer import JobWriter

    class Died(BaseException):
        pass

    store = JobStore(store.root, news=NEWS)
    child, lock = new_job(store, tmp_path, owner=[OWNER, "claude-s1"])
    status = store.read_status(child.id)
    assert status is not None
    writer = JobWriter(store, child.id)
    writer.write_result("All green.")
    status.status = "done"

    def record() -> None:
        if dies == "before its status":
            writer.append_event("done")
        raise Died

    with pytest.raises(Died):
        news.tell(job_end(store, child, "done", answer="All green.", status=status), record)
    writer.close()
    assert not Inbox(store.root, "claude-s1").has_pending()  # the status never said done
    status.status = "running"
    try:
        ended = record_end(store, status, "error", "supervisor crashed")
    finally:
        lock.release()
    assert ended.status == ("done" if dies == "before its status" else "error")
    (event,) = Inbox(store.root, OWNER).pending().events
    assert event.id == f"job-{child.id}:notice:1" and event.body.endswith("All green.")
    (notice,) = Inbox(store.root, "claude-s1").pending().events
    assert notice.id == event.id and notice.details["status"] == ended.status


def test_telling_before_the_features_are_booted_is_a_bug(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unbooted, no feature would render an end (a proc's job_exit): never lost silently
    (a process that left its boot to the store's news, `NEWS.boot`, boots instead)."""
    from specialists.base.errors import Bug
    from specialists.store.news import NEWS

    record = make_record(tmp_path, id="1a2b3c4d", owner=[OWNER])
    monkeypatch.setattr(NEWS, "booted", False)
    monkeypatch.setattr(NEWS, "boot", None)
    with pytest.raises(Bug, match="booted"):
        news.tell(job_end(JobStore(tmp_path / ".specialists", news=None), record, "done"))
    assert not (tmp_path / ".specialists" / "owners").exists()


def test_another_owners_damaged_job_is_not_this_jobs_problem(
    store: JobStore, tmp_path: Path
) -> None:
    """A damaged status.json of a job someone else owns used to become a notice in every
    ending job's events; it is `status`'s to report. One this owner owns is still named."""
    from specialists.supervise.pending import owned_running_jobs

    theirs, lock_a = new_job(store, tmp_path, owner=["job-99999999"])
    mine, lock_b = new_job(store, tmp_path, owner=[OWNER])
    lock_a.release()
    lock_b.release()
    for job in (theirs, mine):
        path = store.job_dir(job.id) / "status.json"
        path.write_text(path.read_text().replace('"status": "', '"status": 7, "x": "'))
    running, problems = owned_running_jobs(store, OWNER)
    assert running == []
    assert len(problems) == 1 and problems[0].startswith(f"job {mine.id}: ")


def test_a_symlinked_owner_directory_is_refused_and_not_followed(
    store: JobStore, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "events.jsonl").write_text('{"planted": true}\n')
    (store.root / "owners").mkdir(parents=True)
    (store.root / "owners" / OWNER).symlink_to(elsewhere)
    with pytest.raises(StoreError, match="is a symlink"):
        pending_work(store, OWNER)
    assert sorted(p.name for p in elsewhere.iterdir()) == ["events.jsonl"]


# --- the "job ended" event ------------------------------------------------------------------


def test_a_job_end_is_one_notice_per_owner_deduplicated_by_its_fixed_id(tmp_path: Path) -> None:
    """Each job owner hears once, however many reporters; outside sessions hear through the
    completion notice their own front turns into an event, never twice."""
    root = tmp_path / ".specialists"
    second = "job-9f8e7d6c"
    record = make_record(tmp_path, id="1a2b3c4d", owner=[OWNER, second, "claude-s1", "not a key"])
    store = JobStore(root, news=None)
    assert news.tell(job_end(store, record, "done", answer="All green.")) == []
    assert news.tell(job_end(store, record, "error", error="crashed")) == []  # a second report
    assert not Inbox(root, "claude-s1").has_pending()
    for owner in (OWNER, second):
        (event,) = Inbox(root, owner).pending().events
        assert event.id == "job-1a2b3c4d:notice:1"
        assert event.body == "Job 1a2b3c4d (tester) done. Its answer:\nAll green."
        assert event.source == EventSource(
            "job", "1a2b3c4d", {"specialist": "tester", "prompt": "do it"}
        )


def test_an_owner_a_rendering_addressed_gets_no_generic_end_notice(tmp_path: Path) -> None:
    """The features' renderings of the one end come first; the generic notice goes only to
    the job owners none of them addressed."""
    from specialists.events.told import Told
    from specialists.supervise.hooks import HOOKS

    root = tmp_path / ".specialists"
    second = "job-9f8e7d6c"
    record = make_record(tmp_path, id="1a2b3c4d", owner=[OWNER, second])
    source = EventSource("spawn_thread", "c1")

    def render(ending: object) -> list[Told]:
        return [Told(OWNER, "child_closed", source, "closed", "t-1", 1, {})]

    HOOKS.ended.append(render)
    try:
        assert news.tell(job_end(JobStore(root, news=None), record, "done", answer="ok")) == []
    finally:
        HOOKS.ended.remove(render)
    assert [e.id for e in Inbox(root, OWNER).pending().events] == ["t-1:child_closed:1"]
    assert [e.id for e in Inbox(root, second).pending().events] == ["job-1a2b3c4d:notice:1"]


def test_a_rendering_that_fails_keeps_neither_the_others_word_nor_recoverys_end(
    store: JobStore, tmp_path: Path
) -> None:
    """A feature's bug while rendering the end is reported; the job owners still hear, and
    recovery still writes the job's end."""
    from specialists.store.news import NEWS
    from specialists.store.recovery import CRASHED, record_end
    from specialists.supervise.hooks import HOOKS

    def broken(ending: object) -> list[object]:
        raise KeyError("a bug")

    store = JobStore(store.root, news=NEWS)
    child, lock = new_job(store, tmp_path, owner=[OWNER])
    HOOKS.ended.insert(0, broken)
    try:
        (problem,) = news.tell(job_end(store, child, "done", answer="ok"))
        status = store.read_status(child.id)
        assert status is not None
        record_end(store, status, "error", CRASHED)
    finally:
        HOOKS.ended.remove(broken)
        lock.release()
    assert (
        problem.startswith(f"could not render the end of job {child.id}: ") and "a bug" in problem
    )
    (event,) = Inbox(store.root, OWNER).pending().events
    assert event.id == f"job-{child.id}:notice:1"
    final = store.read_status(child.id)
    assert final is not None and final.status == "error"


def test_end_texts_and_proc_jobs_that_report_their_own_exit(tmp_path: Path) -> None:
    record = make_record(tmp_path, id="1a2b3c4d")
    assert news.end_text(record, "error", None, "timeout after 5s").endswith(": timeout after 5s")
    assert news.end_text(record, "cancelled", None, None) == "Job 1a2b3c4d (tester) cancelled."
    assert "empty answer" in news.end_text(record, "done", "  ", None)
    long = news.end_text(record, "done", "x" * 10_000, None)
    assert len(long) < 2200 and "specialists result 1a2b3c4d" in long
    proc = make_record(tmp_path, id="1a2b3c4d", runner="proc", owner=[OWNER])
    assert news.end_notices(job_end(JobStore(tmp_path, news=None), proc, "done"), {OWNER}) == []
    assert not (tmp_path / "owners").exists()


def test_a_wake_watch_reads_the_timers_only_when_they_change_or_come_due(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long wait costs a stat per poll; a timer another process sets meanwhile is seen at
    the next poll and fires on time."""
    from specialists.base.clock import FakeClock
    from specialists.events import timers as store_module
    from specialists.events.wake import WakeWatch

    root = tmp_path / ".specialists"
    clock = FakeClock(start=NOW_MS / 1000)
    watch = WakeWatch(root, OWNER)
    folds: list[int] = []
    real_fold = store_module.TimerStore.fold

    def counting(self: TimerStore) -> object:
        folds.append(1)
        return real_fold(self)

    monkeypatch.setattr(store_module.TimerStore, "fold", counting)
    assert watch.wait(5, now=clock, sleep=clock.sleep) is False
    assert folds == []  # no timer file: nothing parsed
    other = TimerStore(root, OWNER)  # "another process"
    other.set(int((clock() + 30) * 1000), now_ms=int(clock() * 1000), source=SRC)
    folds.clear()
    assert watch.wait(10, now=clock, sleep=clock.sleep) is False
    assert len(folds) <= 3  # read once after the change, not once per 25 ms poll
    assert watch.wait(60, now=clock, sleep=clock.sleep) is True
    (event,) = Inbox(root, OWNER).pending().events
    assert event.kind == "timer" and event.ts_ms - event.details["due_ms"] < 50
