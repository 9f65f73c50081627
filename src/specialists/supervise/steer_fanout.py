"""Steering several jobs at once: a workflow's or a parent's running children, or a list.

Each target gets its own steer (steering.py), all posted first and then awaited within the
one STEER_WAIT_S bound, so ten children cost three seconds, not thirty. The overall state:

    delivered   every target acknowledged it
    failed      none got it: every target refused (or there was no running child at all)
    partial     mixed: some targets acknowledged it or were refused, others not (yet);
                read the per-target states and handle the rest explicitly
    scheduled   nobody acknowledged it yet, nobody refused, all were handed to their agents
    pending     as scheduled, but at least one supervisor has not read it yet

A child of job P is a job whose record names P as its parent *and* P as its owner (a
workflow's children, a parent job's threads); a job that only continues P's session
(`resume`) is not its child. Only direct children are steered: a nested workflow's own
children need their own `--children` (seed 004: bare controls never reach hidden descendants).
A fan-out never interrupts anyone (no `recovered` here: see steer_recover.py).
"""

from __future__ import annotations

import time
from typing import Literal

from specialists.base.errors import StoreError, UserError
from specialists.base.tuples import NamedTuple
from specialists.store.jobs import JobStore
from specialists.store.view import all_statuses
from specialists.supervise.actions import post_live
from specialists.supervise.steering import STEER_WAIT_S, SteerOutcome, await_steer

MAX_TARGETS = 64  # one call's fan-out; a bigger fleet is steered in parts
FanState = Literal["delivered", "scheduled", "pending", "partial", "failed"]


class FanOutcome(NamedTuple):
    target: str  # the parent job, or "" for an explicit list
    state: FanState
    each: tuple[SteerOutcome, ...]
    reason: str | None = None  # when there was nobody to steer

    def describe(self) -> str:
        got = sum(1 for o in self.each if o.state == "delivered")
        whom = f"job {self.target}'s children" if self.target else "the jobs"
        head = f"{self.state}: {got} of {len(self.each)} of {whom} acknowledged the steer"
        if self.reason:
            head = f"{self.state}: {self.reason}"
        return "\n".join([head, *(f"  {o.job_id}  {o.describe()}" for o in self.each)])


def overall(states: list[str]) -> FanState:
    """The rule of the module docstring over the per-target states."""
    if not states or all(s == "failed" for s in states):
        return "failed"
    if all(s == "delivered" for s in states):
        return "delivered"
    if any(s in ("delivered", "failed") for s in states):
        return "partial"
    return "pending" if "pending" in states else "scheduled"


def running_children(store: JobStore, parent: str) -> list[str]:
    """The direct children of `parent` that are starting or running, oldest first."""
    statuses, _problems = all_statuses(store)  # an unreadable job is not one we can steer
    owner = f"job-{parent}"
    found: list[tuple[int, str]] = []
    for st in statuses:
        if st.parent_id != parent or st.status not in ("starting", "running"):
            continue
        try:
            record = store.read_record(st.id)
        except (OSError, StoreError):
            continue
        if owner in record.owner:
            found.append((st.started_at_ms or 0, st.id))
    return [job_id for _, job_id in sorted(found)]


def steer_many(
    store: JobStore,
    job_ids: list[str],
    message: str,
    *,
    target: str = "",
    wait_s: float = STEER_WAIT_S,
) -> FanOutcome:
    """Steer each of `job_ids` with `message`; their states and the overall one."""
    if not message.strip():
        raise UserError("the message is empty")
    ids = list(dict.fromkeys(job_ids))  # each job once, in the order given
    if len(ids) > MAX_TARGETS:
        raise UserError(f"{len(ids)} jobs to steer; at most {MAX_TARGETS} at once")
    if not ids:
        why = f"job {target} has no running children" if target else "no jobs to steer"
        return FanOutcome(target, "failed", (), why)
    posted = [(job_id, post_live(store, job_id, "steer", message)) for job_id in ids]
    until = time.monotonic() + wait_s
    each = tuple(
        SteerOutcome(job_id, "failed", reason=p)
        if isinstance(p, str)
        else await_steer(store, job_id, p.id, until)
        for job_id, p in posted
    )
    return FanOutcome(target, overall([o.state for o in each]), each)
