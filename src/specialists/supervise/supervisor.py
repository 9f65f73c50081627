"""The lifecycle of one job: drive a runner, record what happens, end exactly once.

Single-threaded by design: the loop pumps the runner (which waits at most `tick` seconds),
reads the control inbox (requests.py decides), then acts on what is due (watch.py). Every way
a job ends goes through `_finish` (record.py), which writes the final status and event last.
No step can kill the loop, and a stuck step still lets SIGTERM through (steps.py).

Once a run has answered, that answer is the job's result until a later run answers: a later
run that fails, times out or is stopped is recorded (`run_error`), never the job's end state.

A run that ends with pending work (timers, inbox events, jobs the job owns) does not end the
job: it waits, and events wake the agent (waking.py, wake.py).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import assert_never

from specialists.base.errors import SpecialistsError
from specialists.runners.base import (
    Activity,
    AgentExited,
    AgentRunner,
    AnswerDelta,
    Close,
    Kill,
    RunFinished,
    RunnerEvent,
    SpendLimit,
    Usage,
)
from specialists.store.jobs import JobStore, now_ms
from specialists.store.liveness import process_start_time
from specialists.store.records import JobRecord, JobStatus
from specialists.store.writer import failure_reason
from specialists.supervise import watch
from specialists.supervise.agent_spec import launch_spec
from specialists.supervise.bookkeeping import add_usage, note_activity, open_status
from specialists.supervise.hooks import HOOKS, Companion, CompanionContext
from specialists.supervise.reattach import Checkpoints
from specialists.supervise.record import Observer, exit_message
from specialists.supervise.script_phases import run_pre_scripts
from specialists.supervise.steps import StepInterrupted, signal_name
from specialists.supervise.watch import FinalStatus, Limits

__all__ = ["Observer", "Supervisor", "exit_message"]

log = logging.getLogger("specialists.supervisor")


class Supervisor(Checkpoints):
    def __init__(
        self,
        store: JobStore,
        record: JobRecord,
        runner: AgentRunner,
        *,
        observer: Observer | None = None,
        tick: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        wall: Callable[[], float] = time.time,
        handle_signals: bool = True,
        reattach: bool = False,
    ) -> None:
        """`clock` and `sleep` are the supervisor's time, `wall` the timers' (tests: one
        FakeClock for all three). `reattach`: take over a running job (reattach.py)."""
        super().__init__(
            store, record, runner, observer=observer, clock=clock, handle_signals=handle_signals
        )
        self._setup_waking(wall=wall, sleep=sleep)
        self._setup_controls()
        self._setup_checkpoints(reattach=reattach)
        self.tick = tick
        self.limits = Limits.of(record)
        self._last_event_mono = clock()
        self.spend = SpendLimit()
        context = CompanionContext(
            store, record, self.status, clock, wall, self._event, self._stop_with, self.spend
        )
        self.companions: list[Companion] = [
            c for make in HOOKS.companions if (c := make(context)) is not None
        ]

    # --- entry ------------------------------------------------------------------------

    def run(self) -> JobStatus:
        self.guard.install(on_second_interrupt=lambda: self.runner.send(Kill()))
        try:
            self._resume() if self.reattach else self._begin()
            while not self.finished:
                self._step()
        except Exception as exc:  # noqa: BLE001 - logged (with its traceback if a bug) there
            self._abandon_after(exc)
        finally:
            self.guard.uninstall()
            self.writer.close()
        return self.status

    # --- start ------------------------------------------------------------------------

    def _begin(self) -> None:
        rec, st, pid = self.record, self.status, os.getpid()
        open_status(st, rec, pid=pid, start_time=process_start_time(pid), now_ms=now_ms())
        self._event(
            "starting", specialist=rec.specialist, model=rec.model, runner=rec.runner, id=rec.id
        )
        if self._startup_notice:
            self._notice(self._startup_notice)
        self._save(force=True)
        self.guard.run("owners' timers", self._look_at_owners)

        task = rec.task
        try:
            with self.guard.interruptible():
                task, failure = run_pre_scripts(rec, self._event)
            if failure:
                st.error = failure
        except StepInterrupted:
            self._notice("pre-scripts interrupted by a signal")
        if self.guard.signal is not None:
            self._finish("cancelled", None)
            return
        for companion in self.companions:
            self.guard.run("companion", companion.began)
        if self.finished:  # a companion ended it before it began (a spend ceiling reached)
            return
        try:
            self.runner.start(launch_spec(rec, self.job_dir, task, self.spend))
        except SpecialistsError as exc:
            self._finish("error", exc.one_line())
            return
        except OSError as exc:
            self._finish("error", f"could not start the agent: {exc}")
            return
        agent = self.runner.handle
        st.pid, st.agent_start_time, st.session_file = (
            agent.pid,
            agent.start_time,
            agent.session_ref,
        )
        st.status = st.current_event = "running"
        self._run_started_mono = self.clock()
        self._save(force=True)

    # --- the loop ---------------------------------------------------------------------

    def _step(self) -> None:
        events: list[RunnerEvent] = []
        waiting = self._ending is None and self._waiting()
        # Where the supervisor delivers events, the wait for them (below) is the step's wait.
        poll_s = 0.0 if waiting and self.delivery == "supervisor" else self.tick
        if not self.guard.run("runner", lambda: events.extend(self.runner.poll(poll_s))):
            self.sleep(self.tick)  # a broken runner returns at once: do not spin on it
            if self._ending is None:
                bug = f"bug: the {self.record.runner} runner failed"
                self._begin_kill("error", failure_reason(self.guard.last_failure, bug))
        for ev in events:
            handled = self.guard.run("event", lambda ev=ev: self._on_runner_event(ev))  # type: ignore[misc]
            if not handled and ev.kind in ("run_finished", "agent_exited") and self._ending is None:
                self._begin_kill("error", f"bug: handling the agent's {ev.kind} failed")
            if self.finished:
                return
        self.guard.run("inbox", self._read_inbox)
        if self.guard.signal is not None and self._ending is None:
            self._begin_stop(f"stopped by {signal_name(self.guard.signal)}")
        if self.guard.signal is not None:
            self.guard.answered()  # a stop, or an ending already under way
        waiting = self._ending is None and self._waiting() and not self.finished
        if waiting and not self.guard.run("wake", self._wake_step):
            self.sleep(self.tick)  # a broken inbox must not make the wait spin
        if not self.finished:
            self.guard.run("timers", self._act_on_due)
        self.guard.run("checkpoint", self._checkpoint)
        if not self.finished and self._ending is None:
            self.guard.run("attention", self._attend)

    def _attend(self) -> None:
        running = self.status.status == "running" and not self.waiting_for_work
        if any([c.tick(running) for c in self.companions]):
            self._save(force=True)

    def _on_runner_event(self, ev: RunnerEvent) -> None:
        self._last_event_mono = self.clock()
        st = self.status
        st.last_event_at_ms = now_ms()
        if st.stalled:
            st.stalled = False
            self._dirty = True
        if any([c.saw(ev, self._last_event_mono) for c in self.companions]):
            self._dirty = True
        if isinstance(ev, AnswerDelta):
            self._show(lambda observer: observer.on_text(ev.text))
            for fields in self.words.add(ev.text):
                self._said(fields)
            if st.current_event != "text":
                st.current_event = "text"
                self._dirty = True
            return
        if not (isinstance(ev, Activity) and ev.event == "text"):
            self._words_end()  # anything else ends a block of text
        if isinstance(ev, Activity):
            self._on_activity(ev)
        elif isinstance(ev, Usage):
            add_usage(self.status, ev)
            self._dirty = True
        elif isinstance(ev, RunFinished):
            self._on_run_finished(ev)
        elif isinstance(ev, AgentExited):
            self._on_agent_exited(ev)
        else:
            assert_never(ev)

    def _on_activity(self, ev: Activity) -> None:
        if ev.event == "text":  # a block of text begins: its words are logged as they come
            self._words_end()
            note_activity(self.status, ev)
            self._dirty = True
            return
        if ev.event == "run_start":
            self._on_agent_run()
        elif ev.event == "steer_ack":
            self._agent_took_steer(True)
        elif ev.event == "notice" and ev.fields.get("message") == "steer rejected":
            self._agent_took_steer(False, str(ev.fields.get("error") or ""))
        note_activity(self.status, ev)
        # Control acknowledgements are the supervisor's to log, with the request id.
        if ev.log and ev.event != "steer_ack":
            self._event(ev.event, **dict(ev.fields))
            self._save(force=True)
        else:
            self._dirty = True

    def _on_run_finished(self, ev: RunFinished) -> None:
        if ev.session_file:
            self.status.session_file = ev.session_file
        if self._ending is not None:
            if self._ending.final == "done" and not ev.error:
                # A steer that raced the end of the run was answered: that is the last word.
                self.last_answer = ev.text or ""
            # Otherwise (stop, timeout) the agent answered the abort; let it go.
            self._send(Close())
            return
        if ev.error:
            self._on_run_failed(ev.error)
            return
        text = ev.text or ""
        self._interrupted = False  # the run ended before the interrupt took: nothing paused
        self.yielded = ev.yielded
        for companion in self.companions:  # a safe end of turn
            self.guard.run("companion", companion.turn_ended)
        if ev.yielded:  # the agent waits for an event: not an answer
            self._event("run_end", chars=len(text), yielded=True)
        else:
            self.last_answer = text
            self._answers += 1
            self.nudged = False
            self._event("run_end", chars=len(text), runs=self._answers)
            if self.record.keep_alive:
                self._write_answer(text)
        if self.held and self._send_held_follow_up():
            return
        self._after_run()

    def _on_run_failed(self, error: str) -> None:
        self._drop_held(f"the run before it ended: {error}")
        if error == "aborted" and self._interrupted:
            # A soft interrupt: the job pauses, resumable with a follow-up or `resume`.
            self._event("interrupted")
            self._paused_mono = self.clock()
            paused = self._ending_for("interrupted", None)
            for hook in HOOKS.paused:
                self.guard.run("pausing", lambda hook=hook: hook(paused))  # type: ignore[misc]
            self._wait_for_follow_up()
            return
        if self.record.keep_alive and (error == "aborted" or self.last_answer is not None):
            # The job lives on: an aborted run, or a later run failing, leaves it waiting
            # with its answers as they were.
            if error == "aborted":
                self._event("aborted")
            else:
                self._event("run_error", error=error)
            self._wait_for_follow_up()
            return
        self._begin_end("error", error)

    def _on_agent_exited(self, ev: AgentExited) -> None:
        self.status.exit_code = ev.exit_code if ev.signal is None else -ev.signal
        if self._ending is not None:
            self._finish(self._ending.final, self._ending.error)
        elif self._waiting() and self.last_answer is not None:
            self._finish("done", None)
        else:
            self._finish("error", exit_message(ev))

    # --- timers -----------------------------------------------------------------------

    def _act_on_due(self) -> None:
        now = self.clock()
        ending = self._ending
        if ending is not None:
            self._ending = ending.after(now)  # taken now, whatever happens below
        timing = watch.Timing(
            status="waiting" if self.waiting_for_work else self.status.status,
            run_started=self._run_started_mono,
            last_output=self._last_event_mono,
            idle_since=self._idle_since,
            stalled=self.status.stalled,
            saved_at=self._saved_at,
            unsaved=self._dirty,
            waiting_for_work=self.waiting_for_work,
            wake_due=self.next_due_mono,
        )
        for item in watch.due(timing, self.limits, ending, now):
            self._on_due(item)
            if self.finished:
                return

    def _on_due(self, item: watch.Due) -> None:
        st = self.status
        if isinstance(item, watch.LadderDue):
            self._send(item.command)
        elif isinstance(item, watch.GiveUp):
            ending = self._ending
            if ending is not None:
                self._finish(ending.final, ending.error)
        elif isinstance(item, watch.RunTimedOut):
            self._begin_kill("error", f"timeout after {item.limit_ms / 1000:g}s")
        elif isinstance(item, watch.StallBegan):
            st.stalled = True
            self._event("stalled", quiet_ms=item.quiet_ms)
            self._save(force=True)
            if item.kill:
                self._begin_kill(
                    "error", f"stalled: no agent output for {item.quiet_ms / 1000:.0f}s"
                )
        elif isinstance(item, watch.IdleTimedOut):
            self._event("idle_timeout", idle_ms=item.idle_ms)
            limit = f"{item.idle_ms / 1000:g} s"
            if self._interrupted and self.last_answer is None:
                self._begin_end("error", f"interrupted, and not resumed within {limit}")
            elif self.waiting_for_work and self.last_answer is None:
                self._begin_end("error", f"no event within the idle limit ({limit}): {self.why}")
            else:
                self._begin_end("done", None)
        elif isinstance(item, watch.SaveDue):
            self._save(force=True)
        else:
            assert_never(item)

    # --- ending -------------------------------------------------------------------------

    def _begin_ending(
        self, final: FinalStatus, error: str | None, ladder: tuple[watch.Ladder, float]
    ) -> None:
        self._drop_held("the job is ending")
        self._ending = watch.plan_ending(final, error, ladder, self.clock())
        self.guard.answered()
        self._act_on_due()  # the ladder's first step is due at once

    def _begin_end(self, final: FinalStatus, error: str | None) -> None:
        """A run ended normally or with an agent error: close the agent politely."""
        self.status.current_event = "closing"
        self._begin_ending(final, error, watch.CLOSE_LADDER)

    def _begin_stop(self, why: str) -> None:
        """Graceful stop: abort the run, then SIGTERM, then SIGKILL."""
        self._event("stopping", reason=why)
        self.status.current_event = "stopping"
        self._begin_ending("cancelled", None, watch.STOP_LADDER)
        self._save(force=True)

    def _stop_with(self, error: str) -> None:
        """A companion ends the job (a spend ceiling reached): as a stop, with an error."""
        if self.status.status == "starting" and not self.finished:  # no agent to stop yet
            self._finish("error", error)
        elif self._ending is None and not self.finished:
            self._event("stopping", reason=error)
            self.status.current_event = "stopping"
            self._begin_ending("error", error, watch.STOP_LADDER)
            self._save(force=True)

    def _begin_kill(self, final: FinalStatus, error: str) -> None:
        """Timeout, stall kill or a broken runner: no politeness."""
        self._begin_ending(final, error, watch.KILL_LADDER)
