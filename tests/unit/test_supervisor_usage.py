"""A usage limit through the real Supervisor on one FakeClock (no process): the job pauses,
its own timer continues it at the reset (not before, and not ended idle meanwhile); a job
whose provider is held starts at the reset; a stop while paused or held ends it."""

from __future__ import annotations

from pathlib import Path

import pytest

from specialists.events.timers import TimerStore
from specialists.features.usage_limits import holds
from specialists.features.usage_limits.pause import LIMIT_RESET
from specialists.runners.base import FollowUp, RunFinished
from specialists.store.control import post_request
from specialists.supervise.hooks import HOOKS
from tests.support.supervising import Harness

LIMIT = "429 Rate limit exceeded for requests: retry after 150 seconds"


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path)


def test_a_limit_pauses_and_the_reset_continues_the_session(h: Harness) -> None:
    runner = h.runner(
        [RunFinished(text=None, error=LIMIT)],
        follow_up_script=[RunFinished(text="finished after the reset")],
    )
    started = h.clock()
    status = h.run(runner, idle_timeout_ms=60_000)
    assert status.status == "done" and h.result() == "finished after the reset"
    assert h.clock() - started >= 150  # paused past its one-minute idle limit, not ended
    (resumed,) = [c for c in runner.commands if isinstance(c, FollowUp)]
    assert resumed.synthetic and resumed.message.endswith(LIMIT_RESET)
    kinds = h.kinds()
    assert kinds.index("usage_limit") < kinds.index("usage_resumed") < kinds.index("done")
    limit = next(e for e in h.events() if e["event"] == "usage_limit")
    assert limit["provider"] == "mock" and limit["error"] == LIMIT
    assert limit["resets_at_ms"] == int((started + 150) * 1000)
    found = holds.held(h.store.root, "mock", int(started * 1000))
    assert found is not None and found.job == h.job_id
    assert status.paused_until_ms is None


def test_a_limit_without_a_reset_fails_the_job_as_before(h: Harness) -> None:
    runner = h.runner([RunFinished(text=None, error="429 Rate limit exceeded")])
    status = h.run(runner)
    assert status.status == "error" and status.error == "429 Rate limit exceeded"
    assert "usage_limit" not in h.kinds()


def test_the_pause_is_the_features_the_supervisor_alone_fails_the_job(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The supervisor knows no usage limit: without the feature's pause (HOOKS.pauses) a
    limit with a reset time is an error like any other, and nothing is held."""
    monkeypatch.setattr(HOOKS, "pauses", [])
    runner = h.runner([RunFinished(text=None, error=LIMIT)], follow_up_script=[])
    status = h.run(runner)
    assert status.status == "error" and status.error == LIMIT
    assert "usage_limit" not in h.kinds() and status.paused_until_ms is None
    assert holds.held(h.store.root, "mock", 0) is None


def test_a_stop_while_paused_cancels_the_job_and_its_timer(h: Harness) -> None:
    runner = h.runner(
        [RunFinished(text=None, error=LIMIT)],
        follow_up_script=[RunFinished(text="never")],
    )
    sleep, stop_at = h.clock.sleep, h.clock() + 60

    def sleeping(seconds: float) -> None:  # a person's stop, a minute into the pause
        nonlocal stop_at
        sleep(seconds)
        if h.clock() >= stop_at:
            stop_at = float("inf")
            post_request(h.store.job_dir(h.job_id), "stop", "")

    h.clock.sleep = sleeping  # type: ignore[method-assign]
    status = h.run(runner)
    assert status.status == "cancelled"
    assert not [c for c in runner.commands if isinstance(c, FollowUp)]
    timers = TimerStore(h.store.root, f"job-{h.job_id}").fold().timers
    assert [t.state for t in timers.values()] == ["cancelled"]


def test_a_follow_up_ends_the_pause_and_a_request_after_it_still_reaches_the_job(
    h: Harness,
) -> None:
    """A person's follow-up ends the pause early; a steer sent just after it waits for the
    job's next look and is answered there, never dropped with the pause."""
    runner = h.runner(
        [RunFinished(text=None, error=LIMIT)],
        follow_up_script=[RunFinished(text="went on early")],
    )
    sleep, sent = h.clock.sleep, False

    def sleeping(seconds: float) -> None:  # both sent a minute into the pause
        nonlocal sent
        sleep(seconds)
        if not sent and h.clock() >= started + 60:
            sent = True
            post_request(h.store.job_dir(h.job_id), "follow_up", "go on now")
            post_request(h.store.job_dir(h.job_id), "steer", "and mind the tests")

    h.clock.sleep = sleeping  # type: ignore[method-assign]
    started = h.clock()
    status = h.run(runner)
    assert status.status == "done" and h.result() == "went on early"
    assert h.clock() - started < 150  # the follow-up, not the reset, ended the pause
    (resumed,) = [c for c in runner.commands if isinstance(c, FollowUp)]
    assert resumed.message.endswith("go on now")
    assert [e["event"] for e in h.events() if e["event"].endswith("_ack")] == [
        "follow_up_ack",
        "steer_ack",
    ]


def test_a_held_provider_starts_the_job_at_the_reset(h: Harness) -> None:
    now = h.clock()
    holds.hold(h.store.root, "mock", int((now + 600) * 1000), "other01", "usage limit")
    runner = h.runner([RunFinished(text="ran after the hold")])
    status = h.run(runner)
    assert status.status == "done" and h.result() == "ran after the hold"
    assert h.clock() >= now + 600
    kinds = h.kinds()
    assert kinds.index("held") < kinds.index("hold_ended") < kinds.index("run_end")
    held = [e for e in h.events() if e["event"] == "held"]
    assert len(held) == 1 and held[0]["by"] == "other01"
    notices = [e["message"] for e in h.events() if e["event"] == "notice"]
    assert sum("held until" in n for n in notices) == 1


def test_a_stop_while_held_cancels_the_job_before_its_agent_starts(h: Harness) -> None:
    now = h.clock()
    holds.hold(h.store.root, "mock", int((now + 600) * 1000), "other01", "usage limit")
    runner = h.runner([RunFinished(text="never")])
    status = h.run(runner, pending=("stop",))
    assert status.status == "cancelled" and status.paused_until_ms is None
    assert h.clock() < now + 600  # not kept until the reset
    kinds = h.kinds()
    assert "held" in kinds and "run_end" not in kinds and "hold_ended" not in kinds
    assert h.acks("stop")[0]["delivered"] is True
