"""The supervisor's waiting side: a job with pending work waits, and events wake its agent.

`Waking` sits between the recorder and the supervisor's loop: after every run the loop asks
`_after_run`, which decides (wake.py) between waiting for work, the keep-alive wait for a
follow-up, a nudge, and the end. While the job waits, `_wake_step` runs once per loop step:

- where the supervisor delivers, it waits up to one tick in `timers.wake.WakeWatch.wait`
  (which fires due timers, sleeping exactly until the next one is due) and, when the inbox
  has events, sends them as one synthetic follow-up and acknowledges them;
- where the agent's own front delivers (pi with our extension), it fires due timers and
  leaves the inbox alone; a run the extension starts is taken like any other;
- every RECHECK_S it asks whether anything is still pending, and ends the job (with its
  answer) once nothing is and the agent has answered.

Waiting is bounded by the job's timeout (it counts the waits of a piece of work) and by its
idle limit (watch.py; a pending timer is a promise, so the limit runs from its due time).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import assert_never

from specialists.base.errors import SpecialistsError, StoreError
from specialists.events.emitter import Emitter
from specialists.events.model import EventSource
from specialists.events.owners import check_owner
from specialists.events.wake import WakeWatch
from specialists.runners.base import FollowUp, RunnerEvent
from specialists.store.records import PAUSED_EVENT
from specialists.supervise import news, wake
from specialists.supervise.hooks import HOOKS
from specialists.supervise.pending import Pending, check_owner_dir, pending_work
from specialists.supervise.record import Recorder
from specialists.supervise.watch import FinalStatus

log = logging.getLogger("specialists.supervisor")


class Waking(Recorder):
    def _setup_waking(self, *, wall: Callable[[], float], sleep: Callable[[float], None]) -> None:
        """The waiting side's state (called once by the supervisor's __init__)."""
        self.wall = wall  # timers are wall-clock records; the rest runs on `clock`
        self.sleep = sleep
        self.tick = 0.1
        self.owner = check_owner(f"job-{self.record.id}")
        self.delivery: wake.Delivery | None = None  # known once the first run ends
        self.yielded = False  # the latest run ended on a yielding tool
        self.nudged = False
        self.waiting_for_work = False
        self.why = ""
        self.next_due_mono: float | None = None  # the next pending timer, on `clock`
        self._recheck_at = 0.0
        self._idle_since: float | None = None
        self._run_started_mono = self.clock()
        self._emitter: Emitter | None = None
        self._watch = WakeWatch(self.store.root, self.owner)

    # --- provided by the supervisor ---------------------------------------------------------

    def _begin_end(self, final: FinalStatus, error: str | None) -> None:
        raise NotImplementedError

    def _on_runner_event(self, ev: RunnerEvent) -> None:
        raise NotImplementedError

    def _before_control_writes(self) -> None:
        """A checkpoint before the agent is written to for a request (reattach.py)."""

    def _look_at_owners(self) -> None:
        """On start: fire what is due for this job and for its owners (R-T4: timers whose
        front is gone fire when any front next sees their owner)."""
        owners = [self.owner, *self.record.owner]
        self._report(news.fire_owners_due(self.store.root, owners, self._now_ms()))

    # --- after a run ------------------------------------------------------------------------

    def _after_run(self) -> None:
        """The run is over and no follow-up is held: wait for work, wait, or end."""
        if self.delivery is None:
            takes = "follow_up" in self.runner.accepts()
            self.delivery = wake.delivery_mode(self.record, takes)
        if self.delivery == "agent":
            # The extension may be starting a run for an event right now: decide on the next
            # step, after reading what pi said meanwhile (_recheck).
            self._wait_for_work("what the agent does next")
            self._recheck_at = self.clock()
            return
        pending = self._pending()
        if pending is not None:
            self._follow(wake.after_run(self._situation(pending), self._now_ms()))

    def _situation(self, pending: Pending) -> wake.WakeSituation:
        return wake.WakeSituation(
            pending=pending,
            answered=self.last_answer is not None,
            yielded=self.yielded,
            nudged=self.nudged,
            keep_alive=self.record.keep_alive,
            mode=self.delivery or "none",
        )

    def _follow(self, step: wake.Next) -> None:
        if step.kind == "wait_for_work":
            self._wait_for_work(step.why)
        elif step.kind == "wait_for_follow_up":
            self._wait_for_follow_up()
        elif step.kind == "nudge":
            self.nudged = True
            self._emit_own(wake.NOTHING_PENDING)
            self._wait_for_work("the agent's answer (told that nothing is pending)")
        elif step.kind == "end":
            self._begin_end(step.final, step.error)
        else:
            assert_never(step)

    def _wait_for_work(self, why: str) -> None:
        st = self.status
        first = not self.waiting_for_work
        if not first and why == self.why:
            return  # a recheck that found the same: nothing to log or rewrite
        self._event("waiting", reason="events", why=why)
        self.waiting_for_work, self.why = True, why
        # Still at work for everyone outside (`result --wait` waits on, views say for what):
        # `waiting` is the keep-alive job's wait for a follow-up, with an answer to read.
        st.status, st.current_event, st.current_tool = "running", wake.WAITING_EVENT, why
        if first:
            self._idle_since = self.clock()
            self._recheck_at = self.clock() + wake.RECHECK_S
        self._save(force=True)

    def _wait_for_follow_up(self, *, paused: bool = False) -> None:
        """Wait for a follow-up: the run answered, or (`paused`) an interrupt cut it."""
        if not paused:  # an answer: what features do at each (a checkpoint commit)
            answered = self._ending_for("waiting", None)
            for hook in HOOKS.answered:
                self.guard.run("answered", lambda hook=hook: hook(answered))  # type: ignore[misc]
        self.waiting_for_work = False
        self.status.status = "waiting"
        self.status.current_event = PAUSED_EVENT if paused else "waiting"
        self.status.current_tool = None
        self._idle_since = self.clock()
        self._event("waiting", **({"paused": True} if paused else {}))
        self._save(force=True)
        self.writer.tell_owner()  # the orchestrator hears of each answer, not only the end

    # --- while waiting ----------------------------------------------------------------------

    def _wake_step(self) -> None:
        """One step of a wait: wait up to a tick for events, deliver them, recheck."""
        if self.delivery == "supervisor":
            check_owner_dir(self.store.root, self.owner)
            stop = self.guard  # a signal ends the wait at once
            woke = self._watch.wait(
                self.tick,
                now=self.wall,
                sleep=self.sleep,
                until=lambda: stop.signal is not None,
            )
            if woke:
                self._deliver()
                return
        elif self.delivery == "agent":
            check_owner_dir(self.store.root, self.owner)
            self._watch.look(self._now_ms())
        if self.waiting_for_work and self.clock() >= self._recheck_at:
            self._recheck()

    def _recheck(self) -> None:
        self._recheck_at = self.clock() + wake.RECHECK_S
        pending = self._pending()
        if pending is None or not self.waiting_for_work:
            return
        if self.delivery == "agent":
            # Read pi's output only now: a run the extension started for an event that left
            # the inbox before the snapshot has announced itself by then.
            for ev in self.runner.poll(0.0):
                self._on_runner_event(ev)
                if self.finished or not self.waiting_for_work:
                    return
        elif pending.events:
            return  # the next wait delivers them
        self._follow(wake.after_run(self._situation(pending), self._now_ms()))

    def _deliver(self) -> None:
        if "follow_up" not in self.runner.accepts():
            self.sleep(self.tick)  # it will again; never spin on a pending inbox
            return
        from specialists.events.inbox import Inbox

        resumes_work = self.waiting_for_work
        self._before_control_writes()
        try:
            done = wake.deliver(
                Inbox(self.store.root, self.owner),
                lambda text: self.runner.send(FollowUp(text, synthetic=True)),
            )
        except SpecialistsError as exc:
            # The events stay in the inbox (not acknowledged); the job cannot take them.
            self._begin_end("error", f"the wake-up could not be delivered: {exc.one_line()}")
            return
        for problem in done.problems:
            self._notice(f"inbox of {self.owner}: {problem}")
        if not done.ids:
            return
        self._event("woken", events=list(done.ids), kinds=sorted(set(done.kinds)))
        self._running_again(resumes_work, "woken")
        self._save(force=True)

    def _waiting(self) -> bool:
        """Between runs: waiting for a follow-up, or for events of pending work."""
        return self.waiting_for_work or self.status.status == "waiting"

    def _on_agent_run(self) -> None:
        """A run the agent started by itself (pi's extension, for an event)."""
        if self._waiting():
            self._running_again(self.waiting_for_work, "woken")
            self._save(force=True)

    def _running_again(self, resumes_work: bool, event: str) -> None:
        st = self.status
        st.status, st.current_event, st.current_tool = "running", event, None
        self.waiting_for_work = False
        self._idle_since = None
        if not resumes_work:
            self._run_started_mono = self.clock()  # a new piece of work: its own timeout

    # --- pending work -----------------------------------------------------------------------

    def _pending(self) -> Pending | None:
        """What can still wake the job; None when it cannot wait at all (the job then ends)."""
        try:
            pending = pending_work(
                self.store,
                self.owner,
                own_id=self.record.id,
            )
        except (StoreError, OSError) as exc:
            why = exc.one_line() if isinstance(exc, StoreError) else str(exc)
            self._notice(f"cannot wait for events: {why}")
            if self.last_answer is not None:
                self._begin_end("done", None)
            else:
                self._begin_end("error", f"cannot wait for events: {why}")
            return None
        self._report(list(pending.problems))
        due = pending.next_due_ms
        self.next_due_mono = None if due is None else self.clock() + (due / 1000 - self.wall())
        return pending

    def _report(self, problems: list[str]) -> None:
        for problem in problems:
            self.guard.report(problem)  # each distinct problem once

    def _emit_own(self, body: str) -> None:
        """A notice for this job's own agent, through its inbox like any other event."""
        if self._emitter is None:
            self._emitter = Emitter(self.store.root, f"sup-{self.record.id}")
        self._emitter.emit(self.owner, "notice", EventSource("specialists"), body)

    def _now_ms(self) -> int:
        return int(self.wall() * 1000)
