"""Multi-job steering and steer --recover over a temp store: the overall-state rule, who
counts as a child, the fan-out against fake supervisors (threads that read the control inbox
and answer as a real supervisor would), and recovery's failure paths on fake seams."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from specialists.base.errors import UserError
from specialists.store.jobs import JobStore
from specialists.supervise.actions import SendOutcome
from specialists.supervise.steer_fanout import overall, running_children, steer_many
from specialists.supervise.steer_recover import GO_ON, Recovery, check_top_level, steer_recovering
from specialists.supervise.steering import InterruptOutcome, SteerOutcome
from tests.support.fleet import write_status
from tests.support.jobs import new_job, take_requests


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    s = JobStore(tmp_path / ".specialists", news=None)
    s.ensure_dirs()
    return s


def _job(store: JobStore, tmp_path: Path, status: str = "running", **over: object) -> str:
    record, lock = new_job(store, tmp_path, **over)
    lock.release()
    write_status(store.jobs_dir, record.id, status=status, parent_id=over.get("parent_id"))
    return record.id


@pytest.mark.parametrize(
    ("states", "want"),
    [
        (["delivered", "delivered"], "delivered"),
        (["failed", "failed"], "failed"),
        ([], "failed"),
        (["delivered", "failed"], "partial"),
        (["delivered", "scheduled"], "partial"),
        (["failed", "pending"], "partial"),
        (["scheduled", "scheduled"], "scheduled"),
        (["scheduled", "pending"], "pending"),
    ],
)
def test_the_overall_state_rule(states: list[str], want: str) -> None:
    assert overall(states) == want


def test_children_are_owned_and_running_not_continuations(store: JobStore, tmp_path: Path) -> None:
    """A child names the parent as parent and owner; a `resume` of it only names it parent;
    ended and waiting children take no steer; a grandchild is not a direct child."""
    parent = _job(store, tmp_path, runner="workflow")
    kid = _job(store, tmp_path, parent_id=parent, owner=[f"job-{parent}"])
    _job(store, tmp_path, parent_id=parent, owner=["claude-x"])  # a continuation
    _job(store, tmp_path, "done", parent_id=parent, owner=[f"job-{parent}"])
    _job(store, tmp_path, "waiting", parent_id=parent, owner=[f"job-{parent}"])
    grandchild = _job(store, tmp_path, parent_id=kid, owner=[f"job-{kid}"])
    assert running_children(store, parent) == [kid]
    assert running_children(store, kid) == [grandchild]
    nobody = steer_many(
        store, running_children(store, grandchild), "hi", target=grandchild, wait_s=0.01
    )
    assert nobody.state == "failed" and nobody.reason == f"job {grandchild} has no running children"


class FakeSupervisor:
    """Reads a job's control inbox and answers each steer as `answer` says: deliver (ack and
    the agent's ack), hand (ack only: the agent has not taken it), refuse, or ignore."""

    def __init__(self, store: JobStore, job_id: str, answer: str) -> None:
        self.store, self.job_id, self.answer = store, job_id, answer
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.seq = 0

    def _event(self, **fields: object) -> None:
        self.seq += 1
        line = json.dumps({"seq": self.seq, "ts": 0, **fields}) + "\n"
        with self.store.events_path(self.job_id).open("a") as f:
            f.write(line)

    def _run(self) -> None:
        while not self.stop.wait(0.01):
            if self.answer == "ignore":
                continue
            requests, _ = take_requests(self.store.job_dir(self.job_id))
            for r in requests:
                if self.answer == "refuse":
                    self._event(event="steer_ack", request=r.id, delivered=False, reason="no")
                    continue
                self._event(event="steer_ack", request=r.id, delivered=True)
                if self.answer == "deliver":
                    self._event(event="steer_delivered", request=r.id)


@pytest.fixture
def supervisors() -> Iterator[list[FakeSupervisor]]:
    made: list[FakeSupervisor] = []
    yield made
    for s in made:
        s.stop.set()
        s.thread.join()


def test_a_fan_out_posts_all_then_waits_once_and_says_each_state(
    store: JobStore, tmp_path: Path, supervisors: list[FakeSupervisor]
) -> None:
    parent = _job(store, tmp_path, runner="workflow")
    kids = {}
    for answer in ("deliver", "hand", "refuse", "ignore"):
        kid = _job(store, tmp_path, parent_id=parent, owner=[f"job-{parent}"])
        kids[kid] = answer
        supervisors.append(FakeSupervisor(store, kid, answer))
        supervisors[-1].thread.start()
    out = steer_many(
        store, running_children(store, parent), "look again", target=parent, wait_s=1.5
    )
    got = {o.job_id: o.state for o in out.each}
    want = {"deliver": "delivered", "hand": "scheduled", "refuse": "failed", "ignore": "pending"}
    assert got == {kid: want[a] for kid, a in kids.items()}
    assert out.state == "partial" and out.target == parent
    assert out.describe().startswith(f"partial: 1 of 4 of job {parent}'s children")


def test_a_fan_out_to_jobs_that_all_deliver_is_delivered(
    store: JobStore, tmp_path: Path, supervisors: list[FakeSupervisor]
) -> None:
    ids = [_job(store, tmp_path) for _ in range(3)]
    for job_id in ids:
        supervisors.append(FakeSupervisor(store, job_id, "deliver"))
        supervisors[-1].thread.start()
    out = steer_many(store, ids + ids[:1], "hi", wait_s=5)  # a repeated id is steered once
    assert out.state == "delivered" and [o.job_id for o in out.each] == ids


def test_a_fan_out_refuses_too_many_and_an_empty_message(store: JobStore) -> None:
    with pytest.raises(UserError, match="at most 64"):
        steer_many(store, [f"{i:08x}" for i in range(65)], "hi")
    with pytest.raises(UserError, match="empty"):
        steer_many(store, ["0" * 8], "  ")


def test_recovery_is_refused_for_a_workflow_and_a_child(store: JobStore, tmp_path: Path) -> None:
    flow = _job(store, tmp_path, runner="workflow")
    kid = _job(store, tmp_path, parent_id=flow, owner=[f"job-{flow}"])
    resumed = _job(store, tmp_path, parent_id=kid, owner=["claude-x"])
    with pytest.raises(UserError, match="is a workflow") as e:
        steer_recovering(store, flow, "x")
    assert "--children" in e.value.one_line()
    with pytest.raises(UserError, match=f"is a child of job {flow}"):
        steer_recovering(store, kid, "x")
    check_top_level(store, resumed)  # a continuation is top-level


def _seams(
    first: str, paused: str, *, late: bool = False, sent: str = "delivered", calls: list
) -> Recovery:
    def steer(s: JobStore, j: str, m: str, w: float) -> SteerOutcome:
        calls.append(("steer", m))
        return SteerOutcome(j, first, "r1")  # type: ignore[arg-type]

    def interrupt(s: JobStore, j: str, w: float) -> InterruptOutcome:
        calls.append(("interrupt", w))
        return InterruptOutcome(j, paused, "i1", "the runner cannot abort now")  # type: ignore[arg-type]

    def follow_up(s: JobStore, j: str, m: str) -> SendOutcome:
        calls.append(("follow_up", m))
        return SendOutcome(j, sent, "f1", "job ended")  # type: ignore[arg-type]

    return Recovery(steer, interrupt, follow_up, lambda s, j, r: late)


def test_an_acknowledged_steer_never_interrupts(store: JobStore, tmp_path: Path) -> None:
    job = _job(store, tmp_path)
    for first in ("delivered", "failed"):
        calls: list = []
        out = steer_recovering(store, job, "m", seams=_seams(first, "paused", calls=calls))
        assert out.state == first and calls == [("steer", "m")]


def test_a_missed_ack_recovers_with_the_message_or_only_go_on_after_a_late_ack(
    store: JobStore, tmp_path: Path
) -> None:
    job = _job(store, tmp_path)
    calls: list = []
    out = steer_recovering(store, job, "m", seams=_seams("scheduled", "paused", calls=calls))
    assert out.state == "recovered" and out.reason is None
    assert calls == [("steer", "m"), ("interrupt", 15.0), ("follow_up", "m")]
    calls = []
    seams = _seams("pending", "paused", late=True, calls=calls)
    out = steer_recovering(store, job, "m", seams=seams)
    assert out.state == "recovered" and "late" in (out.reason or "")
    assert calls[-1] == ("follow_up", GO_ON)


@pytest.mark.parametrize("paused", ["interrupting", "pending"])
def test_a_pause_not_confirmed_is_the_exact_failure_and_nothing_resumes(
    store: JobStore, tmp_path: Path, paused: str
) -> None:
    job = _job(store, tmp_path)
    calls: list = []
    out = steer_recovering(
        store, job, "m", recover_s=15, seams=_seams("scheduled", paused, calls=calls)
    )
    assert out.state == "failed" and [c[0] for c in calls] == ["steer", "interrupt"]
    assert f"pause was not confirmed within 15 s (interrupt i1 is {paused})" in (out.reason or "")
    assert f"specialists resume {job}" in (out.reason or "")


def test_a_refused_interrupt_or_a_follow_up_not_taken_fails_with_the_reason(
    store: JobStore, tmp_path: Path
) -> None:
    job = _job(store, tmp_path)
    calls: list = []
    out = steer_recovering(store, job, "m", seams=_seams("scheduled", "refused", calls=calls))
    assert out.state == "failed" and "refused: the runner cannot abort now" in (out.reason or "")
    calls = []
    out = steer_recovering(
        store, job, "m", seams=_seams("scheduled", "paused", sent="refused", calls=calls)
    )
    assert out.state == "failed" and "is paused but the follow-up" in (out.reason or "")
    assert "job ended" in (out.reason or "")


def test_mcp_steer_children_and_job_ids_say_each_state(
    supervisors: list[FakeSupervisor],
) -> None:
    """The MCP tool: children=true and job_ids fan out with per-job `each`; all refused is
    an error result carrying `each`; recover with several jobs, or children with job_ids, is
    one clear error; recover on a workflow names --children."""
    import os

    from specialists.fronts.mcp.handlers import ServerContext
    from specialists.fronts.mcp.table import call_tool
    from specialists.project import Project

    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    ctx = ServerContext(project=Project(root))
    store = ctx.store()
    store.ensure_dirs()
    parent = _job(store, root, runner="workflow")
    kids = [_job(store, root, parent_id=parent, owner=[f"job-{parent}"]) for _ in range(2)]
    for kid, answer in zip(kids, ("deliver", "refuse"), strict=True):
        supervisors.append(FakeSupervisor(store, kid, answer))
        supervisors[-1].thread.start()
    out = call_tool(ctx, "steer", {"job_id": parent, "message": "hi", "children": True})
    assert not out.is_error, out.text
    assert out.data["state"] == "partial"
    # Oldest first; the two were made within one millisecond, so compare without the order.
    assert {e["job_id"]: e["state"] for e in out.data["each"]} == {
        kids[0]: "delivered",
        kids[1]: "failed",
    }
    refused = call_tool(ctx, "steer", {"job_id": kids[1], "message": "x", "job_ids": [kids[1]]})
    assert refused.is_error and refused.data["each"][0]["state"] == "failed"
    both = {"job_id": kids[0], "message": "x", "job_ids": [kids[1]], "recover": True}
    assert "not several" in call_tool(ctx, "steer", both).text
    mixed = {"job_id": parent, "message": "x", "job_ids": [kids[1]], "children": True}
    assert "drop job_ids" in call_tool(ctx, "steer", mixed).text
    flow = call_tool(ctx, "steer", {"job_id": parent, "message": "x", "recover": True})
    assert flow.is_error and "is a workflow" in flow.text and "--children" in flow.text


def test_cli_steer_children_exits_5_on_partial_and_refuses_bad_mixes(
    supervisors: list[FakeSupervisor], capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    from specialists.fronts.cli.main import main

    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    store = JobStore(root / ".specialists", news=None)
    store.ensure_dirs()
    parent = _job(store, root, runner="workflow")
    kids = [_job(store, root, parent_id=parent, owner=[f"job-{parent}"]) for _ in range(2)]
    for kid, answer in zip(kids, ("deliver", "hand"), strict=True):
        supervisors.append(FakeSupervisor(store, kid, answer))
        supervisors[-1].thread.start()
    assert main(["steer", parent, "--children", "look", "again"]) == 5
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"partial: 1 of 2 of job {parent}'s children acknowledged the steer"
    each = {tuple(line.split()[:2]) for line in out[1:3]}  # made within one ms: any order
    assert each == {(kids[0], "delivered:"), (kids[1], "scheduled:")}
    for argv, line in (
        (["steer", f"{kids[0]},{kids[1]}", "--recover", "x"], "not several"),
        (["steer", f"{kids[0]},{kids[1]}", "--children", "x"], "--children takes one parent"),
        (["steer", kids[0], "--recover", "--no-wait", "x"], "drop --no-wait"),
        (["steer", parent, "--recover", "x"], "is a workflow"),
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("error: ") and line in err and "Traceback" not in err
    nobody = _job(store, root)
    assert main(["steer", nobody, "--children", "x"]) == 1
    assert f"job {nobody} has no running children" in capsys.readouterr().err
