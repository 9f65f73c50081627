"""What is due now: the supervisor's timers as one pure function.

Given when things last happened (`Timing`), the job's limits and the time, `due` lists what
must happen now: a run over its time limit, the start of a stall, a waiting job idle for
too long, a status rewrite (heartbeat), or the next steps of an ending ladder. The
supervisor acts on each; nothing here reads a clock or touches a file, so every timer is
tested with plain numbers.

A job that waits for its own pending work (waking.py) is still doing that piece of work: its
time limit counts the wait. Its idle limit counts from the later of the start of the wait
and its next timer's due time (a pending timer is a promise of an event, not idleness).

An ending is decided once (`plan_ending`): its final status, and a ladder of commands for the
agent at fixed delays (close, then SIGTERM, then SIGKILL), then a moment to give up waiting
for the agent and finish anyway.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from specialists.runners.base import Abort, Close, Command, Kill, Terminate
from specialists.store.records import JobRecord

DEFAULT_IDLE_TIMEOUT_MS = 10 * 60 * 1000
STATUS_ONLY_MIN_INTERVAL = 0.25  # seconds between status rewrites for status-only changes
HEARTBEAT_INTERVAL = 5.0  # rewrite status (elapsed_s) at least this often while active
STOP_GRACE = 3.0  # abort -> SIGTERM -> SIGKILL, this many seconds apart
CLOSE_GRACE = 5.0  # after a run: EOF -> SIGTERM -> SIGKILL
KILL_GRACE = 2.0  # timeout or stall kill: SIGTERM -> SIGKILL

FinalStatus = Literal["done", "error", "cancelled"]
Ladder = Sequence[tuple[float, Command]]  # (seconds after the decision, command)

# The three ways to end, as data: each is (ladder, seconds until the supervisor gives up).
CLOSE_LADDER: tuple[Ladder, float] = (
    ((0.0, Close()), (CLOSE_GRACE, Terminate()), (CLOSE_GRACE + 2, Kill())),
    CLOSE_GRACE + 4,
)
STOP_LADDER: tuple[Ladder, float] = (
    ((0.0, Abort()), (STOP_GRACE, Terminate()), (2 * STOP_GRACE, Kill())),
    2 * STOP_GRACE + 2,
)
KILL_LADDER: tuple[Ladder, float] = (
    ((0.0, Terminate()), (KILL_GRACE, Kill())),
    2 * KILL_GRACE,
)


@dataclass(frozen=True)
class Limits:
    """The job's timers, from its launch record."""

    # per piece of work (the prompt, a follow-up): its waits for pending work count, a
    # keep-alive job's waits for a follow-up do not
    timeout_ms: int | None = None
    stall_timeout_ms: int | None = None
    stall_kill: bool = False
    idle_timeout_ms: int = DEFAULT_IDLE_TIMEOUT_MS

    @classmethod
    def of(cls, record: JobRecord) -> Limits:
        return cls(
            timeout_ms=record.timeout_ms or None,
            stall_timeout_ms=record.stall_timeout_ms or None,
            stall_kill=bool(record.stall_kill),
            idle_timeout_ms=record.idle_timeout_ms or DEFAULT_IDLE_TIMEOUT_MS,
        )


@dataclass(frozen=True)
class Timing:
    """When things last happened, in seconds of the supervisor's clock."""

    status: str  # the job's status: only "running" and "waiting" have timers
    run_started: float
    last_output: float
    idle_since: float | None = None
    stalled: bool = False
    saved_at: float = 0.0
    unsaved: bool = False  # status-only changes not written yet
    waiting_for_work: bool = False  # waiting for events of its own pending work
    wake_due: float | None = None  # the next pending timer's due time, on the same clock


@dataclass(frozen=True)
class LadderStep:
    at: float
    command: Command


@dataclass(frozen=True)
class Ending:
    """A decided end, waiting for the agent process to go."""

    final: FinalStatus
    error: str | None
    steps: tuple[LadderStep, ...]
    give_up_at: float

    def after(self, now: float) -> Ending:
        """This ending without the steps that were due at `now` (they have been taken)."""
        left = tuple(s for s in self.steps if s.at > now)
        return Ending(self.final, self.error, left, self.give_up_at)


def plan_ending(
    final: FinalStatus, error: str | None, ladder: tuple[Ladder, float], now: float
) -> Ending:
    steps, give_up_after = ladder
    return Ending(
        final,
        error,
        tuple(LadderStep(now + delay, command) for delay, command in steps),
        now + give_up_after,
    )


# --- what can be due ----------------------------------------------------------------------


@dataclass(frozen=True)
class RunTimedOut:
    limit_ms: int
    kind: Literal["run_timed_out"] = "run_timed_out"


@dataclass(frozen=True)
class StallBegan:
    quiet_ms: int
    kill: bool  # the specialist asked for stalled agents to be killed
    kind: Literal["stall_began"] = "stall_began"


@dataclass(frozen=True)
class IdleTimedOut:
    idle_ms: int
    kind: Literal["idle_timed_out"] = "idle_timed_out"


@dataclass(frozen=True)
class LadderDue:
    command: Command
    kind: Literal["ladder_due"] = "ladder_due"


@dataclass(frozen=True)
class GiveUp:
    """The agent outlived its whole ladder: finish without waiting for its exit."""

    kind: Literal["give_up"] = "give_up"


@dataclass(frozen=True)
class SaveDue:
    kind: Literal["save_due"] = "save_due"


Due = RunTimedOut | StallBegan | IdleTimedOut | LadderDue | GiveUp | SaveDue


def due(timing: Timing, limits: Limits, ending: Ending | None, now: float) -> list[Due]:
    """Everything due at `now`, in the order to act on it (a status write last)."""
    out: list[Due] = []
    if ending is not None:
        out += [LadderDue(step.command) for step in ending.steps if step.at <= now]
        if now >= ending.give_up_at:
            out.append(GiveUp())
    else:
        out += _limits_due(timing, limits, now)
    since_save = now - timing.saved_at
    if since_save >= HEARTBEAT_INTERVAL or (
        timing.unsaved and since_save >= STATUS_ONLY_MIN_INTERVAL
    ):
        out.append(SaveDue())
    return out


def _limits_due(t: Timing, limits: Limits, now: float) -> list[Due]:
    working = t.status == "running" or (t.status == "waiting" and t.waiting_for_work)
    if working and limits.timeout_ms and (now - t.run_started) * 1000 >= limits.timeout_ms:
        return [RunTimedOut(limits.timeout_ms)]
    if t.status == "running":
        if limits.stall_timeout_ms and not t.stalled:
            quiet_ms = (now - t.last_output) * 1000
            if quiet_ms >= limits.stall_timeout_ms:
                return [StallBegan(int(quiet_ms), kill=limits.stall_kill)]
    elif t.status == "waiting" and t.idle_since is not None:
        since = t.idle_since
        if t.waiting_for_work and t.wake_due is not None:
            since = max(since, t.wake_due)
        idle_ms = (now - since) * 1000
        return [IdleTimedOut(limits.idle_timeout_ms)] if idle_ms >= limits.idle_timeout_ms else []
    return []
