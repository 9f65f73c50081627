"""Control on a fake clock and a temp store: the interrupt decision, a paused job, the agent's
steer acknowledgement, one continuation of a session at a time (held, stale, planted; raced
in test_control_processes.py) and retained children."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from specialists.base.errors import UserError
from specialists.runners.base import ALWAYS_ACCEPTED, RunFinished
from specialists.runners.testing import STEERABLE
from specialists.store import keys
from specialists.store.jobs import JobStore
from specialists.store.records import JobRecord
from specialists.supervise.requests import NothingToDo, Pause, Refuse, Situation, decide
from specialists.supervise.retained import retained_children
from specialists.supervise.start import session_holder, session_key, start
from tests.support.fleet import write_status
from tests.support.jobs import make_record
from tests.support.starting import FakeSupervisors
from tests.support.supervising import Harness


def sit(phase: str, runner: str = "pi", accepts: frozenset = STEERABLE) -> Situation:
    return Situation(phase=phase, keep_alive=False, runner=runner, accepts=accepts)  # type: ignore[arg-type]


def test_the_interrupt_decision() -> None:
    assert isinstance(decide("interrupt", "", sit("running")), Pause)
    assert isinstance(decide("interrupt", "", sit("waiting")), NothingToDo)
    starting = decide("interrupt", "", sit("starting"))
    assert isinstance(starting, Refuse) and "starting" in starting.reason
    command = decide("interrupt", "", sit("running", runner="command"))
    assert isinstance(command, Refuse) and "cannot pause" in command.reason
    cannot = decide("interrupt", "", sit("running", accepts=ALWAYS_ACCEPTED))
    assert isinstance(cannot, Refuse) and "use stop" in cannot.reason
    assert isinstance(decide("interrupt", "", sit("ending")), Refuse)


def test_an_interrupted_job_pauses_then_ends_at_its_idle_limit(tmp_path: Path) -> None:
    """Not keep-alive, and yet the aborted run leaves the job waiting (paused); nobody
    resumes it, so the idle limit ends it with an error that says so."""
    h = Harness(tmp_path)
    runner = h.runner([h.post("interrupt"), 30.0, RunFinished("never reached")])
    st = h.run(runner, idle_timeout_ms=2000)
    kinds = [e["event"] for e in h.events()]
    assert "interrupt_ack" in kinds and "interrupted" in kinds and "waiting" in kinds
    assert st.status == "error" and "interrupted, and not resumed within 2 s" in (st.error or "")
    assert any(c.kind == "abort" for c in runner.commands)


def test_steer_is_logged_when_the_agent_acknowledges_it(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    st = h.run(h.runner([h.post("steer", "look left"), 1.0, RunFinished("ok")]))
    assert st.status == "done"
    evs = h.events()
    ack = next(e for e in evs if e["event"] == "steer_ack")
    took = next(e for e in evs if e["event"] == "steer_delivered")
    assert ack["delivered"] is True and took["request"] == ack["request"]


# --- one continuation of a session at a time (supervise/start.py) ------------------------------


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    s = JobStore(tmp_path / ".specialists", news=None)
    s.ensure_dirs()
    return s


def _job(store: JobStore, job_id: str, **fields: object) -> str:
    write_status(store.jobs_dir, job_id, **fields)
    return job_id


def continuing(store: JobStore, source: str) -> JobRecord:
    """A record that continues `source`'s session (as `specialists resume` plans one)."""
    return make_record(store.root.parent, parent_id=source, resume_session="/x", runner="command")


def test_a_live_continuation_refuses_a_second_and_its_end_frees_the_session(
    store: JobStore, supervisors: FakeSupervisors
) -> None:
    source = _job(store, "aaaaaaaa", status="done", session_file="/x")
    holder = start(store, continuing(store, source), check=False).id  # it runs (the fake)
    with pytest.raises(UserError, match=f"being resumed by job {holder} \\(pid "):
        start(store, continuing(store, source), check=False)
    assert sorted(store.list_ids()) == sorted([source, holder])  # the refused one left nothing
    supervisors.finish(holder)
    took = start(store, continuing(store, source), check=False).id
    claim = keys.read(store.root, session_key(source)) or {}
    assert claim["job"] == took and claim["took_over"] == holder


def test_a_holder_whose_supervisor_is_gone_is_taken_over(
    store: JobStore, supervisors: FakeSupervisors
) -> None:
    """Status still says running, but the pid and start time name no live process."""
    source = _job(store, "aaaaaaaa", status="done", session_file="/x")
    _job(store, "bbbbbbbb", status="running", supervisor_pid=2**22 + 7, supervisor_start_time=1)
    keys.claim(store.root, session_key(source), "bbbbbbbb", lambda _job: False)
    took = start(store, continuing(store, source), check=False).id
    claim = keys.read(store.root, session_key(source)) or {}
    assert claim["job"] == took and claim["took_over"] == "bbbbbbbb"
    assert session_holder(store, source) is not None  # the new one, alive


def test_a_planted_fifo_or_symlink_claim_is_never_followed(
    store: JobStore, tmp_path: Path, supervisors: FakeSupervisors
) -> None:
    source = _job(store, "aaaaaaaa", status="done", session_file="/x")
    path = store.root / keys.KEYS_DIR / f"{keys._doc(session_key(source))}.json"
    path.parent.mkdir(mode=0o700)
    os.mkfifo(path)
    assert keys.holder(store.root, session_key(source)) is None  # did not hang
    first = start(store, continuing(store, source), check=False).id
    assert path.is_file() and not path.is_symlink()
    supervisors.finish(first)
    path.unlink()
    target = tmp_path / "elsewhere"
    target.write_text("keep")
    path.symlink_to(target)
    assert keys.holder(store.root, session_key(source)) is None
    start(store, continuing(store, source), check=False)
    assert target.read_text() == "keep" and not path.is_symlink()


def test_retained_children_say_why_each_is_resumable_or_not(
    store: JobStore, tmp_path: Path
) -> None:
    from tests.support.jobs import new_job

    session = tmp_path / "s.jsonl"
    session.write_text("{}\n")
    rows = {}
    for name, fields in {
        "ok": {"status": "done", "session_file": str(session)},
        "stopped": {"status": "cancelled", "session_file": str(session)},
        "nosession": {"status": "error"},
        "gone": {"status": "done", "session_file": str(tmp_path / "missing.jsonl")},
        "running": {"status": "running"},
    }.items():
        record, lock = new_job(store, tmp_path, owner=["cli-boss"], specialist=name)
        lock.release()
        write_status(store.jobs_dir, record.id, specialist=name, **fields)
        rows[name] = record.id
    listed, problems = retained_children(store, "cli-boss")
    assert problems == []
    got = {r.specialist: (r.resumable, r.reason) for r in listed}
    assert "running" not in got
    assert got["ok"] == (True, f"specialists resume {rows['ok']} --prompt ...")
    assert got["stopped"] == (False, "it was stopped (stop is final)")
    assert got["nosession"] == (False, "no agent session was recorded")
    assert got["gone"][0] is False and "is gone" in got["gone"][1]
    keys.claim(
        store.root,
        session_key(rows["ok"]),
        _job(store, "dddddddd", status="running"),
        lambda _j: False,
    )
    again = {r.specialist: r for r in retained_children(store, "cli-boss")[0]}
    assert again["ok"].resumable is False and "being resumed by job dddddddd" in again["ok"].reason
    assert len(retained_children(store, "cli-boss", last=2)[0]) == 2
