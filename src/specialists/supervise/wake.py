"""Dispatch, yield, be woken: what a job does when a run ends and while it waits (P1, P2).

A run that ends (answered, or yielded on sleep / sleep_until_event) leaves the job with or
without pending work (pending.py). With pending work the job does not finish: it waits
(status `waiting`, current_event `waiting_for_events`, current_tool saying for what), and
events for its owner `job-<id>` wake the agent with one synthetic user message in the one
event format (events/render.py). When nothing is pending any more and the agent has
answered, the job ends with that answer.

Who delivers the events (`Delivery`):
- "supervisor": the runner takes a follow-up between runs (native, pi without our
  extension, Claude Code, Codex): the supervisor takes the events and sends them as
  `FollowUp(synthetic=True)`;
- "agent": a pi job that loads our extension (`specialists_extension`): the extension
  delivers events itself; the supervisor only keeps pi alive while work is pending, fires
  due timers, and accepts the runs the extension starts;
- "none": a runner that takes no message between runs, or whose next run would have no
  conversation behind it (command, proc): its job ends with its run.

This module is the pure part: the decisions, and `deliver`, the one at-least-once step
(pending, send, then ack: a send that fails or a process that dies before the ack leaves the
events in the inbox for the next delivery).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from specialists.base.tuples import NamedTuple
from specialists.base.vocab import PROC_RUNNER
from specialists.events.inbox import Batch, Inbox
from specialists.events.render import render_events
from specialists.store.records import JobRecord
from specialists.supervise.pending import Pending

Delivery = Literal["supervisor", "agent", "none"]

WAITING_EVENT = "waiting_for_events"  # status.json current_event while waiting for work
RECHECK_S = 1.0  # while waiting, how often "is anything still pending?" is asked
NOTHING_PENDING = (
    "Nothing is pending any more: no timer, background job or child job can wake you. "
    "Give your answer now with what you know."
)
YIELDED_WITH_NOTHING = (
    "the agent yielded with nothing pending (no timer, job or event could wake it) "
    "and gave no answer"
)


# Runners whose "follow-up" runs the command again with no conversation behind it: an event
# would become a fresh prompt for a script, not a wake-up of an agent that waits.
NO_SESSION_RUNNERS = frozenset({"command", PROC_RUNNER})


def delivery_mode(record: JobRecord, takes_follow_up: bool) -> Delivery:
    if record.runner == "pi" and record.runner_options.get("specialists_extension"):
        return "agent"
    if record.runner in NO_SESSION_RUNNERS:
        return "none"
    return "supervisor" if takes_follow_up else "none"


# --- decisions --------------------------------------------------------------------------


class WakeSituation(NamedTuple):
    """What the decision after a run (or during a wait) depends on."""

    pending: Pending
    answered: bool  # the job has an answer (some run ended without yielding)
    yielded: bool  # the latest run ended on a yielding tool
    nudged: bool  # the agent was already told that nothing is pending
    keep_alive: bool
    mode: Delivery


class WaitForWork(NamedTuple):
    why: str
    kind: Literal["wait_for_work"] = "wait_for_work"


class WaitForFollowUp(NamedTuple):
    """A keep-alive job's ordinary wait (events still wake it where the supervisor delivers)."""

    kind: Literal["wait_for_follow_up"] = "wait_for_follow_up"


class Nudge(NamedTuple):
    """Tell the agent nothing is pending (an inbox notice), then wait for its answer."""

    kind: Literal["nudge"] = "nudge"


class End(NamedTuple):
    final: Literal["done", "error"]
    error: str | None = None
    kind: Literal["end"] = "end"


Next = WaitForWork | WaitForFollowUp | Nudge | End


def after_run(s: WakeSituation, now_ms: int) -> Next:
    """What a job does once a run is over (or, while it waits, once nothing may be left)."""
    if s.mode == "none":
        return WaitForFollowUp() if s.keep_alive else End("done")
    if s.pending.any:
        return WaitForWork(s.pending.why(now_ms))
    if s.yielded and not s.keep_alive:
        if not s.nudged:
            return Nudge()
        return End("done") if s.answered else End("error", YIELDED_WITH_NOTHING)
    return WaitForFollowUp() if s.keep_alive else End("done")


# --- delivery ---------------------------------------------------------------------------


class Delivered(NamedTuple):
    """What one delivery did: the events the agent was sent, and problems in the inbox."""

    ids: tuple[str, ...]
    kinds: tuple[str, ...]
    problems: tuple[str, ...]
    skipped: int  # damaged or duplicate lines passed over


def deliver(inbox: Inbox, send: Callable[[str], None]) -> Delivered:
    """Send the owner's pending events as one message, then acknowledge them.

    At-least-once (R-E6): `send` raising, or the process dying before `ack`, leaves the
    cursor where it was, and the same events are delivered again. Lines that hold no event
    (damaged, foreign, duplicates) are acknowledged without a send, so a waiter that found
    "something pending" never finds it again and spins.
    """
    batch: Batch = inbox.pending()
    if batch.events:
        send(render_events(batch.events))
    inbox.ack(batch)
    return Delivered(
        batch.ids,
        tuple(e.kind for e in batch.events),
        batch.problems,
        len(batch.problems) + batch.duplicates,
    )
