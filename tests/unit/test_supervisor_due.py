"""due.due: everything timed the supervisor does, as a pure function of plain numbers."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specialists.runners.base import Abort, Close, Kill, Terminate
from specialists.supervise.due import (
    CLOSE_LADDER,
    HEARTBEAT_INTERVAL,
    KILL_LADDER,
    STOP_LADDER,
    Facts,
    IdleTimedOut,
    LadderDue,
    Limits,
    RunTimedOut,
    StallBegan,
    due,
    plan_ending,
)

T0 = 100.0


def facts(**kw: Any) -> Facts:
    """A running job with nothing due, except what `kw` changes (no heartbeat unless a case
    asks for one)."""
    base: dict[str, Any] = {"status": "running", "run_started": T0, "last_output": T0}
    return Facts(**{**base, "saved_at": 1e9, **kw})


FOLLOW_UP = {"status": "waiting", "idle_since": T0}  # a keep-alive job's wait for a follow-up
WORK = {**FOLLOW_UP, "waiting_for_work": True}  # the wait for its pending work's events
STOPPING = plan_ending("cancelled", None, STOP_LADDER, T0)

# (what, facts, seconds after T0, what is due)
# fmt: off
CASES: list[tuple[str, dict[str, Any], float, list[Any]]] = [
    ("a run just within its limit", {"limits": Limits(timeout_ms=2000)}, 1.999, []),
    ("a run at its limit", {"limits": Limits(timeout_ms=2000)}, 2.0, [RunTimedOut(2000)]),
    # The time limit is per run and only while at work: an hour's wait is not a run.
    ("a follow-up wait has no time limit", {**FOLLOW_UP, "limits": Limits(timeout_ms=1000),
     "idle_since": T0 + 5}, 50, []),
    ("a new run has its own limit", {"limits": Limits(timeout_ms=1000), "run_started": T0 + 50},
     50.5, []),
    ("the wait for pending work counts", {**WORK, "limits": Limits(timeout_ms=1000)}, 1.0,
     [RunTimedOut(1000)]),
    ("quiet, not yet a stall", {"limits": Limits(stall_timeout_ms=3000, stall_kill=True),
     "last_output": T0 + 1}, 3.9, []),
    ("a stall begins", {"limits": Limits(stall_timeout_ms=3000, stall_kill=True),
     "last_output": T0 + 1}, 4.0, [StallBegan(3000, True)]),
    ("a stall begins once", {"limits": Limits(stall_timeout_ms=3000), "stalled": True}, 60, []),
    ("no stall while waiting for work", {**WORK, "limits": Limits(stall_timeout_ms=3000)}, 60, []),
    ("idle, within the limit", {**FOLLOW_UP, "limits": Limits(idle_timeout_ms=400),
     "saved_at": T0}, 0.3, []),
    ("idle past the limit", {**FOLLOW_UP, "limits": Limits(idle_timeout_ms=400), "saved_at": T0},
     0.4, [IdleTimedOut(400)]),
    # A pending timer is a promise of an event: the idle limit runs from its due time.
    ("idle before a timer's due time", {**WORK, "limits": Limits(idle_timeout_ms=400),
     "wake_due": T0 + 10}, 10.3, []),
    ("idle past a timer's due time", {**WORK, "limits": Limits(idle_timeout_ms=400),
     "wake_due": T0 + 10}, 10.4, [IdleTimedOut(400)]),
    ("a quiet status is not rewritten", {"saved_at": T0}, 1, []),
    ("the heartbeat", {"saved_at": T0}, HEARTBEAT_INTERVAL, ["save"]),
    ("a status-only change waits a moment", {"saved_at": T0, "unsaved": True}, 0.2, []),
    ("then it is written", {"saved_at": T0, "unsaved": True}, 0.25, ["save"]),
    ("a recheck before its time", {**WORK, "recheck_at": T0 + 1}, 0.99, []),
    ("a recheck at its time", {**WORK, "recheck_at": T0 + 1}, 1, ["recheck"]),
    ("a follow-up wait never rechecks", {**FOLLOW_UP, "recheck_at": T0}, 1, []),
    ("the agent delivers: timers fire while it waits", {**WORK, "agent_delivers": True}, 0,
     ["fire_timers"]),
    ("also in a follow-up wait", {**FOLLOW_UP, "agent_delivers": True}, 0, ["fire_timers"]),
    ("not during a run", {"agent_delivers": True}, 0, []),
    ("the supervisor delivers: its wait fires them", WORK, 0, []),
    ("a hosted runner checkpoints every step", {"hosted": True}, 0, ["checkpoint"]),
    ("companions tick during a run", {"companions": True}, 0, ["attend"]),
    ("and while the job waits", {**WORK, "companions": True}, 0, ["attend"]),
    # An ending: only its ladder (no limit, no recheck, no companion), and checkpoints still,
    # which then say the job cannot be taken over.
    ("an ending's first step, and nothing else", {**WORK, "ending": STOPPING, "recheck_at": T0,
     "agent_delivers": True, "companions": True, "limits": Limits(timeout_ms=1)}, 0,
     [LadderDue(Abort())]),
    ("a checkpoint during an ending", {"ending": STOPPING, "hosted": True}, 0,
     [LadderDue(Abort()), "checkpoint"]),
    ("everything at once, in order", {**WORK, "recheck_at": T0, "agent_delivers": True,
     "limits": Limits(timeout_ms=1000), "saved_at": T0, "unsaved": True, "hosted": True,
     "companions": True}, 1,
     ["fire_timers", "recheck", RunTimedOut(1000), "save", "checkpoint",
      "attend"]),
]
# fmt: on


@pytest.mark.parametrize(("what", "kw", "after", "expected"), CASES, ids=[c[0] for c in CASES])
def test_what_is_due(what: str, kw: dict[str, Any], after: float, expected: list[Any]) -> None:
    assert due(T0 + after, facts(**kw)) == expected


def test_the_ladders_are_data() -> None:
    assert [c for _, c in STOP_LADDER[0]] == [Abort(), Terminate(), Kill()]
    assert [c for _, c in CLOSE_LADDER[0]] == [Close(), Terminate(), Kill()]
    assert [c for _, c in KILL_LADDER[0]] == [Terminate(), Kill()]
    for steps, give_up in (STOP_LADDER, CLOSE_LADDER, KILL_LADDER):
        delays = [d for d, _ in steps]
        assert delays == sorted(delays) and delays[0] == 0 and give_up > delays[-1]


def test_an_ending_steps_down_its_ladder_then_gives_up() -> None:
    ending = plan_ending("cancelled", None, STOP_LADDER, T0)
    limits = Limits(timeout_ms=1)
    assert due(T0, facts(ending=ending, limits=limits)) == [LadderDue(Abort())]  # no timeout
    ending = ending.after(T0)
    assert due(T0 + 2.9, facts(ending=ending)) == []
    assert due(T0 + 3.0, facts(ending=ending)) == [LadderDue(Terminate())]
    ending = ending.after(T0 + 3.0)
    assert due(T0 + 100, facts(ending=ending)) == [LadderDue(Kill()), "give_up"]


@given(
    now=st.floats(min_value=0, max_value=30, allow_nan=False),
    ladder=st.sampled_from([STOP_LADDER, CLOSE_LADDER, KILL_LADDER]),
)
def test_only_steps_whose_time_has_come_are_due(now: float, ladder: tuple) -> None:
    ending = plan_ending("done", None, ladder, 0.0)
    items = due(now, facts(saved_at=now, ending=ending))
    sent = [i.command for i in items if isinstance(i, LadderDue)]
    assert sent == [c for delay, c in ladder[0] if delay <= now]
    assert ("give_up" in items) == (now >= ladder[1])
    assert ending.after(now).steps == tuple(s for s in ending.steps if s.at > now)
