"""watch.due: the supervisor's timers as a pure function of plain numbers."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from specialists.runners.base import Abort, Close, Kill, Terminate
from specialists.supervise.watch import (
    CLOSE_LADDER,
    HEARTBEAT_INTERVAL,
    KILL_LADDER,
    STOP_LADDER,
    GiveUp,
    IdleTimedOut,
    LadderDue,
    Limits,
    RunTimedOut,
    SaveDue,
    StallBegan,
    Timing,
    due,
    plan_ending,
)

T0 = 100.0


def running(**kw: object) -> Timing:
    base: dict[str, object] = {"status": "running", "run_started": T0, "last_output": T0}
    base["saved_at"] = kw.pop("saved_at", 1e9)  # no heartbeat unless a test asks for one
    return Timing(**{**base, **kw})  # type: ignore[arg-type]


def test_a_run_times_out_at_its_limit_not_before() -> None:
    limits = Limits(timeout_ms=2000)
    assert due(running(), limits, None, T0 + 1.999) == []
    assert due(running(), limits, None, T0 + 2.0) == [RunTimedOut(2000)]


def test_the_time_limit_is_per_run_and_only_while_running() -> None:
    limits = Limits(timeout_ms=1000)
    waiting = Timing("waiting", run_started=T0, last_output=T0, idle_since=T0 + 5, saved_at=1e9)
    assert due(waiting, limits, None, T0 + 50) == []  # an hour of waiting is not a run
    assert due(running(run_started=T0 + 50), limits, None, T0 + 50.5) == []


def test_a_stall_begins_once_after_quiet_time() -> None:
    limits = Limits(stall_timeout_ms=3000, stall_kill=True)
    assert due(running(last_output=T0 + 1), limits, None, T0 + 3.9) == []
    assert due(running(last_output=T0 + 1), limits, None, T0 + 4.0) == [StallBegan(3000, True)]
    assert due(running(last_output=T0 + 1, stalled=True), limits, None, T0 + 60) == []


def test_idle_keep_alive_job_times_out() -> None:
    limits = Limits(idle_timeout_ms=400)
    waiting = Timing(status="waiting", run_started=T0, last_output=T0, idle_since=T0, saved_at=T0)
    assert due(waiting, limits, None, T0 + 0.3) == []
    assert due(waiting, limits, None, T0 + 0.4) == [IdleTimedOut(400)]


def test_heartbeat_and_status_only_changes_are_saved() -> None:
    quiet = running(saved_at=T0)
    assert due(quiet, Limits(), None, T0 + 1) == []
    assert due(quiet, Limits(), None, T0 + HEARTBEAT_INTERVAL) == [SaveDue()]
    dirty = running(saved_at=T0, unsaved=True)
    assert due(dirty, Limits(), None, T0 + 0.2) == []
    assert due(dirty, Limits(), None, T0 + 0.25) == [SaveDue()]


def test_the_ladders_are_data() -> None:
    assert [c for _, c in STOP_LADDER[0]] == [Abort(), Terminate(), Kill()]
    assert [c for _, c in CLOSE_LADDER[0]] == [Close(), Terminate(), Kill()]
    assert [c for _, c in KILL_LADDER[0]] == [Terminate(), Kill()]
    for steps, give_up in (STOP_LADDER, CLOSE_LADDER, KILL_LADDER):
        delays = [d for d, _ in steps]
        assert delays == sorted(delays) and delays[0] == 0 and give_up > delays[-1]


def test_an_ending_steps_down_its_ladder_then_gives_up() -> None:
    ending = plan_ending("cancelled", None, STOP_LADDER, T0)
    timing = running()
    assert due(timing, Limits(timeout_ms=1), ending, T0) == [LadderDue(Abort())]  # no timeout
    ending = ending.after(T0)
    assert due(timing, Limits(), ending, T0 + 2.9) == []
    assert due(timing, Limits(), ending, T0 + 3.0) == [LadderDue(Terminate())]
    ending = ending.after(T0 + 3.0)
    assert due(timing, Limits(), ending, T0 + 100) == [LadderDue(Kill()), GiveUp()]


@given(
    now=st.floats(min_value=0, max_value=30, allow_nan=False),
    ladder=st.sampled_from([STOP_LADDER, CLOSE_LADDER, KILL_LADDER]),
)
def test_only_steps_whose_time_has_come_are_due(now: float, ladder: tuple) -> None:
    ending = plan_ending("done", None, ladder, 0.0)
    items = due(running(saved_at=now), Limits(), ending, now)
    sent = [i.command for i in items if isinstance(i, LadderDue)]
    assert sent == [c for delay, c in ladder[0] if delay <= now]
    assert (GiveUp() in items) == (now >= ladder[1])
    assert ending.after(now).steps == tuple(s for s in ending.steps if s.at > now)
