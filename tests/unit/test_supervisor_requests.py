"""No answer is ever destroyed by a request (issue 7 item 4).

A request the runner cannot act on now is refused at once, with the reason in its ack, and
a request that was accepted never turns a finished answer into an error. Covered three ways:
the pure decision over every phase; the supervisor with each runner profile in every state
(starting, running, waiting, closing) on a fake clock; and the case that lost answers, a
follow-up to a running one-shot `command` job, with a real process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from specialists.runners.base import (
    ALWAYS_ACCEPTED,
    Abort,
    AgentExited,
    CommandKind,
    FollowUp,
    RunFinished,
    Steer,
)
from specialists.runners.testing import (
    ONE_SHOT_BETWEEN_RUNS,
    ONE_SHOT_RUNNING,
    STEERABLE,
    ScriptedRunner,
)
from specialists.supervise.requests import (
    Deliver,
    EndWaiting,
    Hold,
    NothingToDo,
    Refuse,
    Situation,
    StopJob,
    ack_fields,
    decide,
)
from tests.support.supervising import Harness

# --- the decision ---------------------------------------------------------------------------


def situation(phase: str, accepts: frozenset[CommandKind] = STEERABLE, **kw: Any) -> Situation:
    return Situation(
        phase=phase, keep_alive=kw.get("keep_alive", False), runner="x", accepts=accepts
    )  # type: ignore[arg-type]


def test_every_request_is_refused_while_the_job_ends() -> None:
    for kind in ("stop", "abort", "steer", "follow_up"):
        assert decide(kind, "m", situation("ending")) == Refuse("job is ending")


def test_follow_up_is_held_while_running_and_delivered_while_waiting() -> None:
    assert decide("follow_up", "m", situation("running")) == Hold("m")
    assert decide("follow_up", "m", situation("starting")) == Hold("m")
    assert decide("follow_up", "m", situation("waiting")) == Deliver(FollowUp("m"))


def test_follow_up_is_refused_now_when_the_runner_cannot_take_one() -> None:
    refused = decide("follow_up", "m", situation("running", ONE_SHOT_RUNNING))
    assert refused == Refuse("the x runner does not take a follow-up while a run is going")
    assert decide("follow_up", "m", situation("waiting", ALWAYS_ACCEPTED)) == Refuse(
        "the x runner does not take a follow-up now"
    )
    assert decide("follow_up", "m", situation("waiting", ONE_SHOT_BETWEEN_RUNS)) == Deliver(
        FollowUp("m")
    )


def test_steer_needs_a_run_and_a_runner_that_steers() -> None:
    assert decide("steer", "m", situation("running")) == Deliver(Steer("m"))
    assert decide("steer", "m", situation("waiting")).kind == "refuse"
    refused = decide("steer", "m", situation("running", ONE_SHOT_RUNNING))
    assert isinstance(refused, Refuse) and "cannot be steered" in refused.reason


def test_stop_and_abort() -> None:
    assert decide("stop", "", situation("running")) == StopJob("stopped by request")
    assert decide("stop", "", situation("waiting")) == EndWaiting()
    assert decide("abort", "", situation("waiting")) == NothingToDo()
    assert decide("abort", "", situation("running")) == StopJob("aborted by request")
    keep = situation("running", keep_alive=True)
    assert decide("abort", "", keep) == Deliver(Abort())
    no_abort = situation("running", ALWAYS_ACCEPTED, keep_alive=True)
    assert decide("abort", "", no_abort).kind == "refuse"


def test_acks_say_delivered_queued_or_why_not() -> None:
    assert ack_fields("r1", Refuse("no")) == {"request": "r1", "delivered": False, "reason": "no"}
    assert ack_fields("r1", Hold("m")) == {"request": "r1", "delivered": True, "queued": True}
    assert ack_fields("r1", Deliver(Steer("m"))) == {"request": "r1", "delivered": True}


# --- every runner profile in every state ----------------------------------------------------

PROFILES = {
    # pi and native: everything while a run is going and between runs
    "steerable": {"while_running": STEERABLE, "between_runs": STEERABLE},
    # claude -p and codex exec: no steer; a follow-up only between runs (resumed)
    "resumable": {"while_running": ONE_SHOT_RUNNING, "between_runs": ONE_SHOT_BETWEEN_RUNS},
    # a plain command: one run, nothing after it
    "single": {"while_running": ONE_SHOT_RUNNING, "between_runs": ALWAYS_ACCEPTED},
}
FOLLOW_UP_ACCEPTED = {  # (profile, state) -> is a follow-up taken
    ("steerable", "starting"): True,
    ("steerable", "running"): True,
    ("steerable", "waiting"): True,
    ("resumable", "waiting"): True,
}


def run_state(h: Harness, profile: str, state: str) -> ScriptedRunner:
    """Run a job with a follow-up posted in `state`; returns the runner."""
    kw: dict[str, Any] = {**PROFILES[profile], "follow_up_script": [0.1, RunFinished("second")]}
    follow_up = h.post("follow_up", "more")
    if state == "starting":  # in the inbox before the agent starts; read once it runs
        h.run(h.runner([0.2, RunFinished(text="first")], **kw), pending=["follow_up"])
    elif state == "running":
        h.run(h.runner([0.2, follow_up, 0.2, RunFinished(text="first")], **kw))
    elif state == "waiting":
        runner = h.runner([RunFinished(text="first"), 0.1, follow_up], **kw)
        h.run(runner, keep_alive=True, idle_timeout_ms=1000)
        return runner
    else:  # closing: the run answered and the agent is being closed
        script = [RunFinished(text="first"), follow_up, 0.3, AgentExited(0)]
        runner = h.runner(script, exits_on_close=False, **kw)
        h.run(runner)
        return runner
    return h.supervisor.runner  # type: ignore[union-attr, return-value]


@pytest.mark.parametrize("state", ["starting", "running", "waiting", "closing"])
@pytest.mark.parametrize("profile", list(PROFILES))
def test_a_follow_up_never_destroys_the_answer(tmp_path: Path, profile: str, state: str) -> None:
    h = Harness(tmp_path)
    runner = run_state(h, profile, state)
    status = h.store.read_status(h.job_id)
    assert status is not None and status.status == "done", status and status.error
    [ack] = h.acks("follow_up")
    accepted = FOLLOW_UP_ACCEPTED.get((profile, state), False)
    assert ack["delivered"] is accepted, ack
    if accepted:
        assert runner.sent("follow_up") == [FollowUp("more")]
        assert h.result() == "second"
    else:
        assert ack["reason"]  # the reason is given when it is asked, not later
        assert runner.sent("follow_up") == []
        assert h.result() == "first"


@pytest.mark.parametrize("state", ["running", "waiting"])
@pytest.mark.parametrize("profile", list(PROFILES))
def test_a_steer_is_taken_or_refused_at_once(tmp_path: Path, profile: str, state: str) -> None:
    h = Harness(tmp_path)
    kw = PROFILES[profile]
    steer = h.post("steer", "look again")
    if state == "running":
        h.run(h.runner([0.1, steer, 0.1, RunFinished(text="first")], **kw))
    else:
        h.run(h.runner([RunFinished(text="first"), steer], **kw), keep_alive=True)
    [ack] = h.acks("steer")
    taken = profile == "steerable" and state == "running"
    assert ack["delivered"] is taken and (taken or ack["reason"])
    assert h.result() == "first"


def test_a_failed_follow_up_run_keeps_the_earlier_answer(tmp_path: Path) -> None:
    """The follow-up was accepted and its run failed: the job is done with the first answer,
    and the failure is on record."""
    h = Harness(tmp_path)
    failing = [0.1, RunFinished(text=None, error="provider 500")]
    runner = h.runner(
        [h.post("follow_up", "more"), 0.1, RunFinished("first")], follow_up_script=failing
    )
    status = h.run(runner)
    assert status.status == "done" and h.result() == "first"
    [failure] = [e for e in h.events() if e["event"] == "run_error"]
    assert failure["error"] == "provider 500"


def test_a_follow_up_run_that_crashes_or_is_stopped_keeps_the_earlier_answer(
    tmp_path: Path,
) -> None:
    h = Harness(tmp_path)
    crash = [0.1, AgentExited(None, signal=9)]
    runner = h.runner(
        [h.post("follow_up", "more"), 0.1, RunFinished("first")], follow_up_script=crash
    )
    assert h.run(runner).status == "done" and h.result() == "first"
    assert runner.sent("follow_up") and "run_error" in h.kinds()

    (tmp_path / "second").mkdir()
    h = Harness(tmp_path / "second")
    stop = [0.1, h.post("stop"), 30.0]
    runner = h.runner(
        [h.post("follow_up", "more"), 0.1, RunFinished("first")], follow_up_script=stop
    )
    assert h.run(runner).status == "done" and h.result() == "first"
    assert "run_error" in h.kinds() and "cancelled" not in h.kinds()


def test_keep_alive_failed_follow_up_goes_back_to_waiting(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    failing = [RunFinished(text=None, error="boom"), h.post("stop")]
    runner = h.runner([RunFinished("first"), h.post("follow_up", "more")], follow_up_script=failing)
    status = h.run(runner, keep_alive=True)
    assert status.status == "done" and h.result() == "first"
    assert h.kinds().count("waiting") == 2 and "run_error" in h.kinds()


def test_held_follow_ups_are_dropped_with_a_reason_when_the_run_fails(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    runner = h.runner([h.post("follow_up", "more"), 0.1, RunFinished(text=None, error="bad")])
    status = h.run(runner)
    assert (status.status, status.error) == ("error", "bad")
    [dropped] = [e for e in h.events() if e["event"] == "follow_up_dropped"]
    assert "bad" in dropped["reason"] and runner.sent("follow_up") == []


# --- the case that lost answers, with a real process ---------------------------------------
