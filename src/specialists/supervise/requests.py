"""What the supervisor does with a control request: a pure decision, made when it is asked.

A request the runner cannot act on *now* is refused now, with the reason in its ack: it is
never accepted first and failed later (a failed follow-up used to turn a good answer into an
error). Whether the runner can act comes from its declared `accepts()`, not from catching an
error.

A follow-up that arrives while a run is going is held by the supervisor and sent when the
run ends, so each follow-up gets a run (and an answer) of its own.
"""

from __future__ import annotations

from typing import Literal

from specialists.base.tuples import NamedTuple
from specialists.runners.base import Abort, Command, CommandKind, FollowUp, Steer

Phase = Literal["starting", "running", "waiting", "ending"]


class Situation(NamedTuple):
    """What a decision depends on."""

    phase: Phase
    keep_alive: bool
    runner: str  # the runner's name, for reasons
    accepts: frozenset[CommandKind]  # what the runner takes now
    answered: bool = True  # the job has an answer (a job waiting for events may have none)


class Refuse(NamedTuple):
    reason: str
    kind: Literal["refuse"] = "refuse"


class Deliver(NamedTuple):
    command: Command
    kind: Literal["deliver"] = "deliver"


class Hold(NamedTuple):
    """A follow-up for after the run in progress."""

    message: str
    kind: Literal["hold"] = "hold"


class StopJob(NamedTuple):
    why: str
    kind: Literal["stop_job"] = "stop_job"


class EndWaiting(NamedTuple):
    """Stop a job that waits for a follow-up: its last answer is the result."""

    kind: Literal["end_waiting"] = "end_waiting"


class Pause(NamedTuple):
    """A soft interrupt: abort the run in progress; the job then waits for a follow-up (or a
    resume) instead of ending, whether or not it is keep-alive."""

    kind: Literal["pause"] = "pause"


class NothingToDo(NamedTuple):
    """Acknowledged, nothing to act on (an abort while no run is going)."""

    kind: Literal["nothing_to_do"] = "nothing_to_do"


Decision = Refuse | Deliver | Hold | StopJob | EndWaiting | Pause | NothingToDo

# Runners whose run cannot be continued after an abort: a plain command has no session.
NO_PAUSE_RUNNERS = frozenset({"command", "proc"})

_WORDS: dict[CommandKind, str] = {"follow_up": "follow-up", "steer": "steer", "abort": "abort"}


def decide(request_kind: str, message: str, s: Situation) -> Decision:
    """The decision for one request (`request_kind` is a control kind: jobs/control.py)."""
    if s.phase == "ending":
        return Refuse("job is ending")
    if request_kind == "stop":
        # A waiting job with an answer ends with it; one that waits for events before it
        # answered anything is stopped (cancelled).
        if s.phase == "waiting" and s.answered:
            return EndWaiting()
        return StopJob("stopped by request")
    if request_kind == "abort":
        if s.phase == "waiting":
            return NothingToDo()
        if not s.keep_alive:
            return StopJob("aborted by request")  # the run is the job: abort ends it
        return Deliver(Abort()) if "abort" in s.accepts else _cannot("abort", s)
    if request_kind == "interrupt":
        if s.phase == "waiting":
            return NothingToDo()  # no turn is running: the job already waits
        if s.phase == "starting":
            return Refuse("job is starting; no turn to interrupt yet")
        if s.runner in NO_PAUSE_RUNNERS:
            return Refuse(f"a {s.runner} job cannot pause (it has no session); use stop")
        if "abort" not in s.accepts:
            return Refuse(f"the {s.runner} runner cannot interrupt its run now; use stop")
        return Pause()
    if request_kind == "steer":
        if s.phase != "running":
            return Refuse("job is not running a turn; use follow-up")
        if "steer" not in s.accepts:
            return Refuse(f"the {s.runner} runner cannot be steered now; use follow-up")
        return Deliver(Steer(message))
    if request_kind == "follow_up":
        if "follow_up" not in s.accepts:
            return _cannot("follow_up", s)
        return Deliver(FollowUp(message)) if s.phase == "waiting" else Hold(message)
    return Refuse(f"unknown request kind {request_kind!r}")


def ack_fields(request_id: str, decision: Decision) -> dict[str, object]:
    """The fields of the `<kind>_ack` event: delivered or not, queued, and why not."""
    ack: dict[str, object] = {"request": request_id, "delivered": decision.kind != "refuse"}
    if decision.kind == "refuse":
        ack["reason"] = decision.reason
    elif decision.kind == "hold":
        ack["queued"] = True
    elif decision.kind == "nothing_to_do":
        ack["nothing_to_do"] = True
    return ack


def _cannot(kind: CommandKind, s: Situation) -> Refuse:
    where = "while a run is going" if s.phase in ("starting", "running") else "now"
    return Refuse(f"the {s.runner} runner does not take a {_WORDS.get(kind, kind)} {where}")
