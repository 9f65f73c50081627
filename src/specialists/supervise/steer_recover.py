"""`steer --recover`: a top-level job that misses a steer's acknowledgement is interrupted and
resumed with the message (seed 004 "Subagent control", the state `recovered`).

Opt-in, because it interrupts an agent that may be in the middle of a tool call: the call is
cancelled, its work so far is whatever the tool left behind. The steps, all bounded:

1. The steer as steering.py sends it; `delivered` or `failed` within STEER_WAIT_S is the
   answer, nothing else happens.
2. Missed (`scheduled` or `pending`): recovery is committed. An interrupt is posted and its
   pause awaited for at most RECOVER_WAIT_S. Not confirmed in time, or refused: the outcome is
   `failed` with the exact reason; nothing resumes the job (it pauses later, if it does, and
   stays paused: resume it yourself).
3. Paused: one follow-up carries the message into the same job (same session, same
   specialist and limits; the interrupt paused the run's clock, so the follow-up continues the
   remaining deadline). If the agent took the original steer late, while it stopped, the
   message is already in its conversation: the follow-up then only says to go on, so the
   model does not read it twice. The late acknowledgement is in the feed (`steer_delivered`)
   and in the outcome; it cannot undo a committed recovery.
4. The follow-up not taken: `failed`, the job stays paused, the reason and the resume line.

Only a top-level single job: a workflow, or a child of a workflow or of a parent job, is
refused (their parents own their pacing; interrupting one child behind its parent's back
would break the parent's plan). Steer those without --recover and act on the states.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from specialists.base.errors import StoreError, UserError
from specialists.base.tuples import NamedTuple
from specialists.base.vocab import WORKFLOW_RUNNER
from specialists.store.jobs import JobStore
from specialists.supervise.actions import SendOutcome, send_message
from specialists.supervise.steering import (
    STEER_WAIT_S,
    InterruptOutcome,
    SteerOutcome,
    events_for,
    interrupt_job,
    steer_job,
)

RECOVER_WAIT_S = 15.0  # the seed's "further 15 seconds" for a confirmed pause
GO_ON = (
    "Go on with your task, following the guidance in the message above (it arrived as your "
    "last step was interrupted)."
)


class Recovery(NamedTuple):
    """The seams recovery drives; tests pass fakes for the failure paths."""

    steer: Callable[[JobStore, str, str, float], SteerOutcome] = lambda s, j, m, w: steer_job(
        s, j, m, wait_s=w
    )
    interrupt: Callable[[JobStore, str, float], InterruptOutcome] = lambda s, j, w: interrupt_job(
        s, j, wait_s=w
    )
    follow_up: Callable[[JobStore, str, str], SendOutcome] = lambda s, j, m: send_message(
        s, j, "follow_up", m
    )
    late_ack: Callable[[JobStore, str, str], bool] = lambda s, j, r: (
        events_for(s, j, r, {"steer_delivered"}, time.monotonic()) is not None
    )


def check_top_level(store: JobStore, job_id: str) -> None:
    """Refuse recovery for a workflow or a child job, in one line."""
    record = store.read_record(job_id)
    if record.runner == WORKFLOW_RUNNER:
        raise UserError(
            f"steer --recover is for a single top-level job; job {job_id} is a workflow",
            hint=f"steer its children: specialists steer {job_id} --children <message>",
        )
    parent = record.parent_id
    if parent and f"job-{parent}" in record.owner:
        raise UserError(
            f"steer --recover is for a top-level job; job {job_id} is a child of job {parent}",
            hint="steer it without --recover and act on its state (its parent paces it)",
        )


def steer_recovering(
    store: JobStore,
    job_id: str,
    message: str,
    *,
    wait_s: float = STEER_WAIT_S,
    recover_s: float = RECOVER_WAIT_S,
    seams: Recovery | None = None,
) -> SteerOutcome:
    use = seams or Recovery()
    try:
        check_top_level(store, job_id)
    except (OSError, StoreError) as exc:
        raise UserError(f"job {job_id}: its record is unreadable: {exc}") from None
    first = use.steer(store, job_id, message, wait_s)
    if first.state in ("delivered", "failed", "recovered"):
        return first
    rid = first.request_id
    paused = use.interrupt(store, job_id, recover_s)
    if paused.state not in ("paused", "already_paused"):
        return SteerOutcome(job_id, "failed", rid, _not_paused(job_id, first, paused, recover_s))
    late = rid is not None and use.late_ack(store, job_id, rid)
    sent = use.follow_up(store, job_id, GO_ON if late else message)
    if sent.state not in ("delivered", "queued"):
        why = sent.reason or f"the supervisor did not take follow-up {sent.request_id} in time"
        return SteerOutcome(
            job_id,
            "failed",
            rid,
            f"job {job_id} is paused but the follow-up carrying the steer was not taken: "
            f"{why}; resume it with: specialists resume {job_id} --prompt ...",
        )
    note = "the agent took the steer late, as it stopped; the follow-up only says go on"
    return SteerOutcome(job_id, "recovered", rid, note if late else None)


def _not_paused(
    job_id: str, first: SteerOutcome, paused: InterruptOutcome, recover_s: float
) -> str:
    missed = f"the steer was {first.state} after its wait and recovery failed"
    if paused.state in ("interrupting", "pending"):
        return (
            f"{missed}: job {job_id}'s pause was not confirmed within {recover_s:g} s "
            f"(interrupt {paused.request_id} is {paused.state}); it is not resumed: if it "
            f"pauses, resume it with: specialists resume {job_id} --prompt ..."
        )
    return f"{missed}: the interrupt was refused: {paused.reason or paused.state}"
