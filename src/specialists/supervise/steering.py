"""Acknowledged steering and the soft interrupt, for every interface (CLI, MCP).

A steer is *acknowledged delivery*, not a send attempt (seed 004 "Subagent control"): it is
posted to the job's control inbox, the supervisor decides and hands it to the agent, and the
agent acknowledges it (pi answers the steer command; the native loop adds it to the
conversation). `steer_job` waits up to STEER_WAIT_S for that and says which state it reached:

    delivered   the agent acknowledged it: it is in its conversation
    scheduled   the supervisor handed it to the agent, which has not acknowledged it yet (it
                takes steers between steps; a long tool call delays it); its ack, when it
                comes, is in the feed as `steer_delivered`
    pending     the supervisor has not read the request yet (busy, a pre-script running): it
                stays in the control inbox and is decided when read
    failed      refused (no turn is running, the runner cannot be steered, the job ended) or
                rejected by the agent, with the reason

Here a steer has one target and is never turned into a resume. The seed's other two states
live beside it: `partial` is the overall state of a steer of several jobs (a workflow's or a
parent's running children, or a list; steer_fanout.py), and `recovered` is the opt-in
`--recover` of a top-level job that missed the acknowledgement: interrupted, then resumed
with the message (steer_recover.py).

`interrupt_job` cancels the run in progress and leaves the job paused (status `waiting`),
resumable with a follow-up or `specialists resume`; `stop` stays final.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

from specialists.base.tuples import NamedTuple
from specialists.store.jobs import JobStore
from specialists.store.view import current_status
from specialists.supervise.actions import events_for, post_live

STEER_WAIT_S = 3.0
INTERRUPT_WAIT_S = 10.0
_POLL_S = 0.03

SteerState = Literal["delivered", "scheduled", "pending", "recovered", "failed"]


class SteerOutcome(NamedTuple):
    job_id: str
    state: SteerState
    request_id: str | None = None
    reason: str | None = None

    def describe(self) -> str:
        rid = f" (request {self.request_id})" if self.request_id else ""
        if self.state == "delivered":
            return f"delivered: job {self.job_id}'s agent acknowledged the steer{rid}"
        if self.state == "scheduled":
            return (
                f"scheduled: handed to job {self.job_id}'s agent, not acknowledged yet{rid}; "
                "it reads steers between steps"
            )
        if self.state == "pending":
            return f"pending: job {self.job_id} has not picked up the steer yet{rid}"
        if self.state == "recovered":
            return (
                f"recovered: job {self.job_id} missed the steer's acknowledgement, was "
                f"interrupted and resumed with the message{rid}"
                + (f"; {self.reason}" if self.reason else "")
            )
        return f"failed: {self.reason or 'refused'}{rid}"


def steer_job(
    store: JobStore, job_id: str, message: str, *, wait_s: float = STEER_WAIT_S
) -> SteerOutcome:
    posted = post_live(store, job_id, "steer", message)
    if isinstance(posted, str):
        return SteerOutcome(job_id, "failed", reason=posted)
    return await_steer(store, job_id, posted.id, time.monotonic() + wait_s)


def await_steer(store: JobStore, job_id: str, request_id: str, until: float) -> SteerOutcome:
    """The state the steer `request_id` reached by the monotonic time `until`."""
    ack = events_for(store, job_id, request_id, {"steer_ack"}, until)
    if ack is None:
        return SteerOutcome(job_id, "pending", request_id)
    if not ack.get("delivered"):
        return SteerOutcome(job_id, "failed", request_id, str(ack.get("reason") or "refused"))
    took = events_for(store, job_id, request_id, {"steer_delivered", "steer_failed"}, until)
    if took is None:
        return SteerOutcome(job_id, "scheduled", request_id)
    if took.get("event") == "steer_failed":
        return SteerOutcome(job_id, "failed", request_id, str(took.get("reason") or "rejected"))
    return SteerOutcome(job_id, "delivered", request_id)


InterruptState = Literal["paused", "interrupting", "already_paused", "pending", "refused"]


class InterruptOutcome(NamedTuple):
    job_id: str
    state: InterruptState
    request_id: str | None = None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.state != "refused"

    def describe(self) -> str:
        j = self.job_id
        resume = (
            f"resume it with: specialists resume {j} --prompt ...; "
            f"end it with: specialists stop {j}"
        )
        if self.state == "paused":
            return f"interrupted: job {j} is paused; {resume}"
        if self.state == "already_paused":
            return f"job {j} runs no turn (it waits); nothing to interrupt"
        if self.state == "interrupting":
            return f"interrupting: job {j}'s run was told to stop and has not paused yet"
        if self.state == "pending":
            return f"pending: job {j} has not picked up the interrupt yet"
        return f"interrupt refused: {self.reason or 'refused'}"


def interrupt_job(
    store: JobStore,
    job_id: str,
    *,
    wait_s: float = INTERRUPT_WAIT_S,
    sleep: Callable[[float], None] = time.sleep,
) -> InterruptOutcome:
    """Post an interrupt and wait (bounded) until the job has paused."""
    request = post_live(store, job_id, "interrupt")
    if isinstance(request, str):
        return InterruptOutcome(job_id, "refused", reason=request)
    until = time.monotonic() + wait_s
    ack = events_for(store, job_id, request.id, {"interrupt_ack"}, until)
    if ack is None:
        return InterruptOutcome(job_id, "pending", request.id)
    if not ack.get("delivered"):
        return InterruptOutcome(job_id, "refused", request.id, str(ack.get("reason") or ""))
    if ack.get("nothing_to_do"):
        return InterruptOutcome(job_id, "already_paused", request.id)
    while True:
        st = current_status(store, job_id)
        if st.status == "waiting":
            return InterruptOutcome(job_id, "paused", request.id)
        if not st.active:
            why = f"job {job_id} ended {st.status} before it could pause"
            return InterruptOutcome(job_id, "refused", request.id, why)
        if time.monotonic() >= until:
            return InterruptOutcome(job_id, "interrupting", request.id)
        sleep(_POLL_S)
