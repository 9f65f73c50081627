"""What is due now: every timed thing the supervisor does, as one pure function.

Given the time and what the supervisor knows (`Facts`: when things last happened, the job's
limits, an ending under way, what kind of waiting it is in), `due(now, facts)` lists what must
happen now, in the order to act on it: the job's own timers, a look at whether anything is
still pending, a run over its time limit, the start of a stall, an idle job's end, the next
steps of an ending, a status rewrite (heartbeat), a checkpoint, and its companions' tick.
The supervisor acts on each; nothing here reads a clock or touches a file, so every timer
is tested with plain numbers.

A job that waits for its own pending work (wake.py) is still doing that piece of work: its
time limit counts the wait. Its idle limit counts from the later of the start of the wait
and its next timer's due time (a pending timer is a promise of an event, not idleness); a job
paused at a usage limit is not idle before the limit resets.

An ending is decided once (`plan_ending`): its final status, and a ladder of commands for the
agent at fixed delays (close, then SIGTERM, then SIGKILL), then a moment to give up waiting
for the agent and finish anyway.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from specialists.base.tuples import NamedTuple
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


class Limits(NamedTuple):
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


class LadderStep(NamedTuple):
    at: float
    command: Command


class Ending(NamedTuple):
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


class Facts(NamedTuple):
    """What the supervisor knows, its times in seconds of its own clock."""

    status: str  # the job's status; "waiting" too while it waits for its pending work
    run_started: float
    last_output: float
    limits: Limits = Limits()
    ending: Ending | None = None
    idle_since: float | None = None
    stalled: bool = False
    saved_at: float = 0.0
    unsaved: bool = False  # status-only changes not written yet
    waiting_for_work: bool = False  # waiting for events of its own pending work
    wake_due: float | None = None  # the next pending timer's due time
    recheck_at: float | None = None  # while waiting for work: look again at what is pending
    agent_delivers: bool = False  # the agent's own front delivers events (wake.py "agent")
    hosted: bool = False  # another supervisor could take the agent over: checkpoint each step
    companions: bool = False  # something runs beside the job (attention): tick each step
    paused_until: float | None = None  # a usage limit's reset: no idleness before it


# --- what can be due ----------------------------------------------------------------------

# Without details: "fire_timers" where the agent delivers the events (where the supervisor
# does, its wait for them fires the timers); "recheck": is anything still pending (the job
# ends once nothing is); "give_up": the agent outlived its whole ladder, finish without
# waiting for its exit; "save": rewrite status.json; "checkpoint"; "attend": the companions'
# tick (attention and the watchdog).
Chore = Literal["fire_timers", "recheck", "give_up", "save", "checkpoint", "attend"]


class RunTimedOut(NamedTuple):
    limit_ms: int
    kind: Literal["run_timed_out"] = "run_timed_out"  # (a tuple equals no other kind's)


class StallBegan(NamedTuple):
    quiet_ms: int
    kill: bool  # the specialist asked for stalled agents to be killed
    kind: Literal["stall_began"] = "stall_began"


class IdleTimedOut(NamedTuple):
    idle_ms: int
    kind: Literal["idle_timed_out"] = "idle_timed_out"


class LadderDue(NamedTuple):
    command: Command
    kind: Literal["ladder_due"] = "ladder_due"


Due = Chore | RunTimedOut | StallBegan | IdleTimedOut | LadderDue


def due(now: float, f: Facts) -> list[Due]:
    """Everything due at `now`, in the order to act on it. At most one item decides an end
    (a recheck, a limit, giving up); the supervisor stops acting on the list once it did."""
    out: list[Due] = []
    if f.ending is not None:
        out += [LadderDue(step.command) for step in f.ending.steps if step.at <= now]
        if now >= f.ending.give_up_at:
            out.append("give_up")
    else:
        if f.status == "waiting" and f.agent_delivers:
            out.append("fire_timers")
        if f.waiting_for_work and f.recheck_at is not None and now >= f.recheck_at:
            out.append("recheck")
        out += _limits_due(f, now)
    since_save = now - f.saved_at
    if since_save >= HEARTBEAT_INTERVAL or (f.unsaved and since_save >= STATUS_ONLY_MIN_INTERVAL):
        out.append("save")
    if f.hosted:
        out.append("checkpoint")
    if f.companions and f.ending is None:
        out.append("attend")
    return out


def _limits_due(f: Facts, now: float) -> list[Due]:
    limits = f.limits
    working = f.status == "running" or f.waiting_for_work
    if working and limits.timeout_ms and (now - f.run_started) * 1000 >= limits.timeout_ms:
        return [RunTimedOut(limits.timeout_ms)]
    if f.status == "running":
        if limits.stall_timeout_ms and not f.stalled:
            quiet_ms = (now - f.last_output) * 1000
            if quiet_ms >= limits.stall_timeout_ms:
                return [StallBegan(int(quiet_ms), kill=limits.stall_kill)]
    elif f.status == "waiting" and f.idle_since is not None:
        since = f.idle_since
        if f.waiting_for_work and f.wake_due is not None:
            since = max(since, f.wake_due)
        if f.paused_until is not None:
            since = max(since, f.paused_until)
        idle_ms = (now - since) * 1000
        return [IdleTimedOut(limits.idle_timeout_ms)] if idle_ms >= limits.idle_timeout_ms else []
    return []
