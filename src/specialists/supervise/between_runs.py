"""What a supervisor does between runs: wait for a follow-up, wait for the events of pending
work, wake the agent with them, or end the job (wake.py decides; this part acts).

A run that ends with pending work (timers, inbox events, jobs the job owns) does not end the
job: it waits, and events wake the agent:

- where the supervisor delivers, each step waits up to a tick in `WakeWatch.wait` (which
  fires due timers, sleeping exactly until the next one is due) and, when the inbox has
  events, sends them as one synthetic follow-up and acknowledges them;
- where the agent's own front delivers (pi with our extension), due timers are fired and the
  inbox is left alone; a run the extension starts is taken like any other;
- every RECHECK_S it asks whether anything is still pending, and ends the job (with its
  answer) once nothing is and the agent has answered.

Waiting is bounded by the job's timeout (it counts the waits of a piece of work) and by its
idle limit (due.py; a pending timer is a promise, so the limit runs from its due time).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

from specialists.base.errors import SpecialistsError, StoreError
from specialists.events.emitter import Emitter
from specialists.events.inbox import Inbox
from specialists.events.model import EventSource
from specialists.runners.base import FollowUp
from specialists.store.records import PAUSED_EVENT
from specialists.supervise import ending, news, wake
from specialists.supervise.hooks import HOOKS
from specialists.supervise.pending import Pending, check_owner_dir, pending_work

if TYPE_CHECKING:
    from specialists.supervise.supervisor import Supervisor


class BetweenRuns:
    def __init__(self, sup: Supervisor) -> None:
        self.sup = sup
        self.recheck_at = 0.0  # while waiting for work: when to look again
        self.next_due: float | None = None  # the next pending timer, on the supervisor's clock
        self._emitter: Emitter | None = None

    def after_run(self) -> None:
        """The run is over and no follow-up is held: wait for work, wait, or end."""
        sup, s = self.sup, self.sup.state
        if s.delivery is None:
            s.delivery = wake.delivery_mode(sup.record, "follow_up" in sup.runner.accepts())
        if s.delivery == "agent":
            # The extension may be starting a run for an event right now: decide on the next
            # step, after reading what pi said meanwhile (recheck).
            self._wait_for_work("what the agent does next")
            self.recheck_at = sup.clock()
            return
        pending = self._pending()
        if pending is not None:
            self._follow(wake.after_run(self._situation(pending), sup.now_ms()))

    def _situation(self, pending: Pending) -> wake.WakeSituation:
        s = self.sup.state
        return wake.WakeSituation(
            pending=pending,
            answered=s.last_answer is not None,
            yielded=s.yielded,
            nudged=s.nudged,
            keep_alive=self.sup.record.keep_alive,
            mode=s.delivery or "none",
        )

    def _follow(self, step: wake.Next) -> None:
        match step:
            case wake.WaitForWork(why=why):
                self._wait_for_work(why)
            case wake.WaitForFollowUp():
                self.wait_for_follow_up()
            case wake.Nudge():
                self.sup.state.nudged = True
                self._emit_own(wake.NOTHING_PENDING)
                self._wait_for_work("the agent's answer (told that nothing is pending)")
            case wake.End(final=final, error=error):
                self.sup.begin_end(final, error)
            case _:
                assert_never(step)

    def _wait_for_work(self, why: str) -> None:
        sup, st, s = self.sup, self.sup.status, self.sup.state
        first = not s.waiting_for_work
        if not first and why == s.why:
            return  # a recheck that found the same: nothing to log or rewrite
        sup.recorder.event("waiting", reason="events", why=why)
        s.waiting_for_work, s.why = True, why
        # Still at work for everyone outside (`result --wait` waits on, views say for what):
        # `waiting` is the keep-alive job's wait for a follow-up, with an answer to read.
        st.status, st.current_event, st.current_tool = "running", wake.WAITING_EVENT, why
        if first:
            s.idle_since = sup.clock()
            self.recheck_at = sup.clock() + wake.RECHECK_S
        sup.save(force=True)

    def wait_for_follow_up(self, *, paused: bool = False, event: str = PAUSED_EVENT) -> None:
        """Wait for a follow-up: the run answered, or (`paused`) it was cut short."""
        sup = self.sup
        st, s, j = sup.status, sup.state, sup.recorder
        answered = ending.job_end(j, sup.guard, "waiting", None, s.last_answer, sup.wall, s.answers)
        if not paused:  # an answer: what features do at each (a checkpoint commit)
            for hook in HOOKS.answered:
                sup.guard.run("answered", lambda hook=hook: hook(answered))  # type: ignore[misc]
        s.waiting_for_work = False
        st.status = "waiting"
        st.current_event = event if paused else "waiting"
        st.current_tool = None
        s.idle_since = sup.clock()
        j.event("waiting", **({"paused": True} if paused else {}))
        sup.save(force=True)
        for problem in news.tell(
            answered
        ):  # the orchestrator hears of each answer, not only the end
            sup.guard.report(problem)

    def listening(self) -> bool:
        """Waiting for events the supervisor delivers: the step waits on them."""
        sup = self.sup
        return sup.ending is None and self.waiting() and sup.state.delivery == "supervisor"

    def listen(self) -> None:
        """Wait up to a tick for the job's events (firing its due timers); deliver them."""
        sup = self.sup
        check_owner_dir(sup.store.root, sup.owner)
        stop = sup.guard  # a signal ends the wait at once
        until = lambda: stop.signal is not None  # noqa: E731
        if sup.watch.wait(sup.tick, now=sup.wall, sleep=sup.sleep, until=until):
            self._deliver()

    def recheck(self) -> None:
        sup = self.sup
        self.recheck_at = sup.clock() + wake.RECHECK_S
        pending = self._pending()
        if pending is None or not sup.state.waiting_for_work:
            return
        if sup.state.delivery == "agent":
            # Read pi's output only now: a run the extension started for an event that left
            # the inbox before the snapshot has announced itself by then.
            for ev in sup.runner.poll(0.0):
                sup.on_runner_event(ev)
                if sup.recorder.finished or not sup.state.waiting_for_work:
                    return
        elif pending.events:
            return  # the next wait delivers them
        self._follow(wake.after_run(self._situation(pending), sup.now_ms()))

    def _deliver(self) -> None:
        sup = self.sup
        if "follow_up" not in sup.runner.accepts():
            sup.sleep(sup.tick)  # it will again; never spin on a pending inbox
            return
        resumes_work = sup.state.waiting_for_work
        sup.before_control_writes()
        try:
            done = wake.deliver(
                Inbox(sup.store.root, sup.owner),
                lambda text: sup.runner.send(FollowUp(text, synthetic=True)),
            )
        except SpecialistsError as exc:
            # The events stay in the inbox (not acknowledged); the job cannot take them.
            sup.begin_end("error", f"the wake-up could not be delivered: {exc.one_line()}")
            return
        for problem in done.problems:
            sup.recorder.notice(f"inbox of {sup.owner}: {problem}")
        if not done.ids:
            return
        sup.recorder.event("woken", events=list(done.ids), kinds=sorted(set(done.kinds)))
        self.running_again(resumes_work, "woken")
        sup.save(force=True)

    def waiting(self) -> bool:
        """Between runs: waiting for a follow-up, or for events of pending work."""
        return self.sup.state.waiting_for_work or self.sup.status.status == "waiting"

    def running_again(self, resumes_work: bool, event: str) -> None:
        sup, st = self.sup, self.sup.status
        if st.paused_until_ms is not None:  # a pause's wake-up came, or a person's resume
            for pause in sup.pauses:
                pause.resumed()
            st.paused_until_ms = None
        st.status, st.current_event, st.current_tool = "running", event, None
        sup.state.waiting_for_work = False
        sup.state.idle_since = None
        if not resumes_work:
            sup.run_started = sup.clock()  # a new piece of work: its own timeout

    def _pending(self) -> Pending | None:
        """What can still wake the job; None when it cannot wait at all (the job then ends)."""
        sup = self.sup
        try:
            pending = pending_work(sup.store, sup.owner, own_id=sup.record.id)
        except (StoreError, OSError) as exc:
            why = exc.one_line() if isinstance(exc, StoreError) else str(exc)
            sup.recorder.notice(f"cannot wait for events: {why}")
            if sup.state.last_answer is not None:
                sup.begin_end("done", None)
            else:
                sup.begin_end("error", f"cannot wait for events: {why}")
            return None
        for problem in pending.problems:
            sup.guard.report(problem)  # each distinct problem once
        self.next_due = sup.on_clock(pending.next_due_ms)
        return pending

    def _emit_own(self, body: str) -> None:
        """A notice for this job's own agent, through its inbox like any other event."""
        if self._emitter is None:
            self._emitter = Emitter(self.sup.store.root, f"sup-{self.sup.record.id}")
        self._emitter.emit(self.sup.owner, "notice", EventSource("specialists"), body)
