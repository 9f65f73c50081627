"""The lifecycle of one job: drive a runner, record what happens, end exactly once.

Single-threaded by design. Each step of the loop pumps the runner (which waits at most `tick`
seconds), reads the control inbox (requests.py decides), waits for the events of the job's
pending work where the supervisor delivers them, then asks `due` (due.py) what is due now and
acts on each item. Every way a job ends goes through `finish` (ending.py), which writes the
final status and event last. No step can kill the loop, and a stuck step still lets SIGTERM
through (steps.py).

The `Supervisor` holds the job's state; its parts are fields: the recorder (what it writes),
the runner, the step guard, the checkpointer (a remote job that another supervisor can take
over after a crash: checkpoint.py), the wake watch (the job's timers and inbox), the
companions features run beside the job, and `JobState`, what a checkpoint carries.

Control requests (steer, follow-up, abort, interrupt, stop) are decided at once and
acknowledged by an event; a follow-up that arrives while a run is going is held and sent when
that run ends, so each gets a run of its own. Once a run has answered, that answer is the
job's result until a later run answers: a later run that fails, times out or is stopped is
recorded (`run_error`), never the job's end state.

A run that ends with pending work (timers, inbox events, jobs the job owns) does not end the
job: it waits (wake.py decides), and events wake the agent:

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

import logging
import os
import time
from collections.abc import Callable
from typing import assert_never, cast

from specialists.base.errors import SpecialistsError, StoreError
from specialists.base.usage_limit import clock_time, from_text
from specialists.events.emitter import Emitter
from specialists.events.inbox import Inbox
from specialists.events.model import EventSource
from specialists.events.owners import check_owner
from specialists.events.timers import TimerStore
from specialists.events.wake import WakeWatch
from specialists.runners.base import (
    Abort,
    Activity,
    AgentExited,
    AgentRunner,
    AnswerDelta,
    Close,
    Command,
    FollowUp,
    HostedRunner,
    Kill,
    RunFinished,
    RunnerEvent,
    SpendLimit,
    Usage,
)
from specialists.store import holds
from specialists.store.control import ControlRequest, take_requests
from specialists.store.files import is_out_of_space
from specialists.store.jobs import JobStore, now_ms
from specialists.store.liveness import process_start_time
from specialists.store.records import HELD_EVENT, LIMIT_EVENT, PAUSED_EVENT, JobRecord, JobStatus
from specialists.store.writer import failure_reason
from specialists.supervise import ending, news, wake
from specialists.supervise.agent_spec import launch_spec
from specialists.supervise.checkpoint import (
    CHECKPOINT_FILE,
    Checkpointer,
    Replay,
    load,
    written_after,
)
from specialists.supervise.due import (
    CLOSE_LADDER,
    KILL_LADDER,
    STOP_LADDER,
    Due,
    Ending,
    Facts,
    FinalStatus,
    IdleTimedOut,
    Ladder,
    LadderDue,
    Limits,
    RunTimedOut,
    StallBegan,
    due,
    plan_ending,
)
from specialists.supervise.hooks import HOOKS, Companion, CompanionContext
from specialists.supervise.job_state import JobState
from specialists.supervise.pending import Pending, check_owner_dir, pending_work
from specialists.supervise.recorder import Observer, Recorder, add_usage, note_activity, open_status
from specialists.supervise.requests import Decision, Phase, Situation, ack_fields, decide
from specialists.supervise.scripts import run_pre_scripts
from specialists.supervise.steps import StepGuard, StepInterrupted, signal_name

__all__ = ["JobState", "Observer", "Supervisor"]  # JobState: supervise/job_state.py

log = logging.getLogger("specialists.supervisor")

# What the agent is told when its usage limit has reset (the timer's note).
LIMIT_RESET = "the usage limit has reset: continue the task where you left off"


class Supervisor:
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
        FakeClock for all three). `reattach`: take over a running job (checkpoint.py)."""
        self.store, self.record, self.runner = store, record, runner
        self.tick, self.clock, self.sleep, self.wall = tick, clock, sleep, wall
        self.reattach = reattach
        self.recorder = Recorder(store, record, observer, clock)
        self.guard = StepGuard(self.recorder.notice, enabled=handle_signals)
        self.limits = Limits.of(record)
        self.state = JobState()
        self.ending: Ending | None = None
        self.run_started = self.last_output = clock()
        self.paused_at: float | None = None  # when an interrupt paused the run
        self.limit_timer: str | None = None  # the timer that ends a usage-limit pause
        self.recheck_at = 0.0  # while waiting for work: when to look again
        self.next_due: float | None = None  # the next pending timer, on `clock`
        self.owner = check_owner(f"job-{record.id}")
        self.watch = WakeWatch(store.root, self.owner)
        self._emitter: Emitter | None = None
        hosted = isinstance(runner, HostedRunner)
        self.checkpoints = Checkpointer(self.recorder) if hosted else None
        self.spend = SpendLimit()
        context = CompanionContext(
            store, record, self.status, clock, wall, self.recorder.event, self._stop_with,
            self.spend,
        )  # fmt: skip
        self.companions: list[Companion] = [
            c for make in HOOKS.companions if (c := make(context)) is not None
        ]

    @property
    def status(self) -> JobStatus:
        return self.recorder.status

    # --- entry ------------------------------------------------------------------------

    def run(self) -> JobStatus:
        self.guard.install(on_second_interrupt=lambda: self.runner.send(Kill()))
        try:
            self._resume() if self.reattach else self._begin()
            while not self.recorder.finished:
                self._step()
        except Exception as exc:  # noqa: BLE001 - logged (with its traceback if a bug) there
            self._abandon_after(exc)
        finally:
            self.guard.uninstall()
            self.recorder.writer.close()
        return self.status

    def _begin(self) -> None:
        rec, st, pid, j = self.record, self.status, os.getpid(), self.recorder
        open_status(st, rec, pid=pid, start_time=process_start_time(pid), now_ms=now_ms())
        j.event(
            "starting", specialist=rec.specialist, model=rec.model, runner=rec.runner, id=rec.id
        )
        if j.startup_notice:
            j.notice(j.startup_notice)
        self._save(force=True)
        self.guard.run("owners' timers", self._look_at_owners)
        task, fatal = rec.task, None
        try:
            with self.guard.interruptible():
                task, failure, required = run_pre_scripts(rec, j.event)
            if failure:
                st.error = failure
                fatal = failure if required else None
        except StepInterrupted:
            j.notice("pre-scripts interrupted by a signal")
        if self.guard.signal is not None:
            self._finish("cancelled", None)
            return
        if fatal is not None:  # a required pre-script failed: the agent never starts
            self._finish("error", fatal)
            return
        for companion in self.companions:
            self.guard.run("companion", companion.began)
        if j.finished:  # a companion ended it before it began (a spend ceiling reached)
            return
        if not self._wait_out_hold():
            return
        try:
            self.runner.start(launch_spec(rec, j.job_dir, task, self.spend))
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
        self.run_started = self.clock()
        self._save(force=True)

    def _look_at_owners(self) -> None:
        """R-T4: timers whose front is gone fire when any front next sees their owner."""
        owners = [self.owner, *self.record.owner]
        self._report(news.fire_owners_due(self.store.root, owners, self._now_ms()))

    def _resume(self) -> None:
        """Take the job over from its last checkpoint (instead of `_begin`)."""
        j, runner = self.recorder, self.runner
        if not isinstance(runner, HostedRunner):  # a local job paused at a usage limit
            self._take_over_pause()
            return
        assert isinstance(runner, HostedRunner) and self.checkpoints is not None
        checkpoint = load(j.job_dir, self.record.runner)
        if isinstance(checkpoint, str):
            self._finish("error", f"supervisor crashed (its checkpoint {checkpoint})")
            return
        try:
            j.status = JobStatus.from_dict(dict(checkpoint["status"]), source=CHECKPOINT_FILE)
            self.state = JobState.from_dict(checkpoint["job"], self.clock())
            if "words" in checkpoint["job"]:  # absent from an older checkpoint
                j.words.restore(checkpoint["job"]["words"])
            cursor = checkpoint["cursor"]
            events = int(checkpoint["events"])
        except (SpecialistsError, KeyError, TypeError, ValueError) as exc:
            self._finish("error", f"supervisor crashed (its checkpoint is unreadable: {exc!r})")
            return
        self.recheck_at = self.clock()  # a job waiting for work looks again at once
        st, pid = j.status, os.getpid()
        if st.paused_until_ms is not None:  # paused at a usage limit: its timer goes on
            self.guard.run("timers", self._find_limit_timer)
        for companion in self.companions:
            companion.use_status(st)
        st.supervisor_pid, st.supervisor_start_time = pid, process_start_time(pid)
        since = max(0, now_ms() - int(checkpoint.get("run_started_ms") or st.started_at_ms))
        self.run_started = self.clock() - since / 1000
        written = written_after(j.job_dir, events)
        try:
            runner.adopt(launch_spec(self.record, j.job_dir, self.record.task), checkpoint)
        except (SpecialistsError, OSError) as exc:
            why = exc.one_line() if isinstance(exc, SpecialistsError) else str(exc)
            self._finish("error", f"supervisor crashed; reattaching to the agent failed: {why}")
            return
        except (KeyError, TypeError, ValueError) as exc:
            why = f"its checkpoint is damaged: {exc!r}"
            self._finish("error", f"supervisor crashed; reattaching to the agent failed: {why}")
            return
        if cursor is None:
            j.notice(
                f"the supervisor restarted and took the job over between runs on the "
                f"{runner.node} (no agent process was running)"
            )
        else:
            j.notice(
                f"the supervisor restarted and reattached to the agent (pid {cursor['pid']}) "
                f"on the {runner.node}; its output is read again from item {cursor['seq']} "
                f"({len(written)} event(s) after the checkpoint are not written twice)"
            )
        j.replay = Replay(written)
        self.checkpoints.mark = None
        self._save(force=True)

    # --- the loop ---------------------------------------------------------------------

    def _step(self) -> None:
        events: list[RunnerEvent] = []
        # Where the supervisor delivers events, the wait for them (below) is the step's wait.
        poll_s = 0.0 if self._listening() else self.tick
        if not self.guard.run("runner", lambda: events.extend(self.runner.poll(poll_s))):
            self.sleep(self.tick)  # a broken runner returns at once: do not spin on it
            if self.ending is None:
                bug = f"bug: the {self.record.runner} runner failed"
                self._begin_kill("error", failure_reason(self.guard.last_failure, bug))
        for ev in events:
            handled = self.guard.run("event", lambda ev=ev: self._on_runner_event(ev))  # type: ignore[misc]
            if not handled and ev.kind in ("run_finished", "agent_exited") and self.ending is None:
                self._begin_kill("error", f"bug: handling the agent's {ev.kind} failed")
            if self.recorder.finished:
                return
        self.guard.run("inbox", self._read_inbox)
        if self.guard.signal is not None and self.ending is None:
            self._begin_stop(f"stopped by {signal_name(self.guard.signal)}")
        if self.guard.signal is not None:
            self.guard.answered()  # a stop, or an ending already under way
        if self._listening() and not self.guard.run("wake", self._listen):
            self.sleep(self.tick)  # a broken inbox must not make the wait spin
        if not self.recorder.finished:
            self._act_on_due()

    def _act_on_due(self) -> None:
        now, ending, st, s = self.clock(), self.ending, self.status, self.state
        if ending is not None:
            self.ending = ending.after(now)  # taken now, whatever happens below
        facts = Facts(
            status="waiting" if s.waiting_for_work else st.status,
            run_started=self.run_started,
            last_output=self.last_output,
            limits=self.limits,
            ending=ending,
            idle_since=s.idle_since,
            stalled=st.stalled,
            saved_at=self.recorder.saved_at,
            unsaved=self.recorder.dirty,
            waiting_for_work=s.waiting_for_work,
            wake_due=self.next_due,
            recheck_at=self.recheck_at,
            agent_delivers=s.delivery == "agent",
            hosted=self.checkpoints is not None,
            companions=bool(self.companions),
            paused_until=self._on_clock(st.paused_until_ms),
        )
        for item in due(now, facts):
            name = item if isinstance(item, str) else "timers"  # what a failure is reported as
            self.guard.run(name, lambda item=item: self._on_due(item))  # type: ignore[misc]
            if self.recorder.finished or (ending is None and self.ending is not None):
                return  # it ended, or an ending began and took what is due with it

    def _on_due(self, item: Due) -> None:
        match item:
            case "fire_timers":
                check_owner_dir(self.store.root, self.owner)
                self.watch.look(self._now_ms())
            case "recheck":
                self._recheck()
            case LadderDue(command=command):
                self._send(command)
            case "give_up":
                if self.ending is not None:
                    self._finish(self.ending.final, self.ending.error)
            case RunTimedOut(limit_ms=limit_ms):
                self._begin_kill("error", f"timeout after {limit_ms / 1000:g}s")
            case StallBegan(quiet_ms=quiet_ms, kill=kill):
                self.status.stalled = True
                self.recorder.event("stalled", quiet_ms=quiet_ms)
                self._save(force=True)
                if kill:
                    self._begin_kill(
                        "error", f"stalled: no agent output for {quiet_ms / 1000:.0f}s"
                    )
            case IdleTimedOut(idle_ms=idle_ms):
                self.recorder.event("idle_timeout", idle_ms=idle_ms)
                limit, s = f"{idle_ms / 1000:g} s", self.state
                if s.interrupted and s.last_answer is None:
                    self._begin_end("error", f"interrupted, and not resumed within {limit}")
                elif s.waiting_for_work and s.last_answer is None:
                    self._begin_end("error", f"no event within the idle limit ({limit}): {s.why}")
                else:
                    self._begin_end("done", None)
            case "save":
                self._save(force=True)
            case "checkpoint":
                self._checkpoint()
            case "attend":
                running = self.status.status == "running" and not self.state.waiting_for_work
                if any([c.tick(running) for c in self.companions]):
                    self._save(force=True)
            case _:
                assert_never(item)

    # --- the runner's events ----------------------------------------------------------

    def _on_runner_event(self, ev: RunnerEvent) -> None:
        self.last_output = self.clock()
        st, j = self.status, self.recorder
        st.last_event_at_ms = now_ms()
        if st.stalled:
            st.stalled = False
            j.dirty = True
        if any([c.saw(ev, self.last_output) for c in self.companions]):
            j.dirty = True
        if isinstance(ev, AnswerDelta):
            j.say(ev.text)
            if st.current_event != "text":
                st.current_event = "text"
                j.dirty = True
            return
        if not (isinstance(ev, Activity) and ev.event == "text"):
            j.words_end()  # anything else ends a block of text
        if isinstance(ev, Activity):
            self._on_activity(ev)
        elif isinstance(ev, Usage):
            add_usage(st, ev)
            j.dirty = True
        elif isinstance(ev, RunFinished):
            self._on_run_finished(ev)
        elif isinstance(ev, AgentExited):
            self._on_agent_exited(ev)
        else:
            assert_never(ev)

    def _on_activity(self, ev: Activity) -> None:
        j = self.recorder
        if ev.event == "text":  # a block of text begins: its words are logged as they come
            j.words_end()
            note_activity(self.status, ev)
            j.dirty = True
            return
        if ev.event == "run_start" and self._waiting():  # a run the agent started itself
            self._running_again(self.state.waiting_for_work, "woken")  # (pi's extension)
            self._save(force=True)
        elif ev.event == "steer_ack":
            self._agent_took_steer(True)
        elif ev.event == "notice" and ev.fields.get("message") == "steer rejected":
            self._agent_took_steer(False, str(ev.fields.get("error") or ""))
        note_activity(self.status, ev)
        # Control acknowledgements are the supervisor's to log, with the request id.
        if ev.log and ev.event != "steer_ack":
            j.event(ev.event, **dict(ev.fields))
            self._save(force=True)
        else:
            j.dirty = True

    def _on_run_finished(self, ev: RunFinished) -> None:
        s, j = self.state, self.recorder
        if ev.session_file:
            self.status.session_file = ev.session_file
        if self.ending is not None:
            if self.ending.final == "done" and not ev.error:
                # A steer that raced the end of the run was answered: that is the last word.
                s.last_answer = ev.text or ""
            # Otherwise (stop, timeout) the agent answered the abort; let it go.
            self._send(Close())
            return
        if ev.error:
            self._on_run_failed(ev.error)
            return
        text = ev.text or ""
        s.interrupted = False  # the run ended before the interrupt took: nothing paused
        s.yielded = ev.yielded
        for companion in self.companions:  # a safe end of turn
            self.guard.run("companion", companion.turn_ended)
        if ev.yielded:  # the agent waits for an event: not an answer
            j.event("run_end", chars=len(text), yielded=True)
        else:
            s.last_answer = text
            s.answers += 1
            s.nudged = False
            j.event("run_end", chars=len(text), runs=s.answers)
            if self.record.keep_alive:
                j.writer.write_answer(s.answers, text)
        if s.held and self._send_held_follow_up():
            return
        self._after_run()

    def _on_run_failed(self, error: str) -> None:
        s, j = self.state, self.recorder
        self._drop_held(f"the run before it ended: {error}")
        if error != "aborted" and self._pause_at_limit(error):
            return
        if error == "aborted" and s.interrupted:
            # A soft interrupt: the job pauses, resumable with a follow-up or `resume`.
            j.event("interrupted")
            self.paused_at = self.clock()
            paused = ending.job_end(
                j, self.guard, "interrupted", None, s.last_answer, self.wall, s.answers
            )
            for hook in HOOKS.paused:
                self.guard.run("pausing", lambda hook=hook: hook(paused))  # type: ignore[misc]
            self._wait_for_follow_up(paused=True)
            return
        if self.record.keep_alive and (error == "aborted" or s.last_answer is not None):
            # The job lives on: an aborted run, or a later run failing, leaves it waiting
            # with its answers as they were.
            if error == "aborted":
                j.event("aborted")
            else:
                j.event("run_error", error=error)
            self._wait_for_follow_up()
            return
        self._begin_end("error", error)

    # --- usage limits (docs/usage-limits.md) -------------------------------------------

    def _pause_at_limit(self, error: str) -> bool:
        """A provider's usage limit with a reset time: the job waits for the reset instead
        of failing. A durable timer (its own, events/timers.py) wakes it then and the wake-up
        continues the agent's session as a follow-up would; new jobs for the provider are
        held until then (store/holds.py). False: not a limit it can wait out."""
        limit = from_text(error, self._now_ms())
        if limit is None or "follow_up" not in self.runner.accepts() or self.ending is not None:
            return False
        rec, st, s, j = self.record, self.status, self.state, self.recorder
        provider = holds.provider_of(rec.runner, rec.model)
        at = limit.resets_at_ms
        try:
            timer = TimerStore(self.store.root, self.owner).set(
                at, now_ms=self._now_ms(), note=LIMIT_RESET, source=EventSource("usage_limit")
            )
        except (SpecialistsError, OSError) as exc:
            why = exc.one_line() if isinstance(exc, SpecialistsError) else str(exc)
            j.notice(f"usage limit: no timer could be set to resume the job ({why})")
            return False
        self.limit_timer = timer.id
        self.guard.run(
            "provider hold", lambda: holds.hold(self.store.root, provider, at, rec.id, limit.why)
        )
        j.event("usage_limit", provider=provider, resets_at_ms=at, timer=timer.id, error=limit.why)
        if s.delivery is None:
            s.delivery = wake.delivery_mode(rec, True)
        paused = ending.job_end(
            j, self.guard, "interrupted", None, s.last_answer, self.wall, s.answers
        )
        for hook in HOOKS.paused:  # what waits on its turn ends (open asks), as at an interrupt
            self.guard.run("pausing", lambda hook=hook: hook(paused))  # type: ignore[misc]
        st.paused_until_ms = at
        self._wait_for_follow_up(paused=True, event=LIMIT_EVENT)
        return True

    def _resumed_from_limit(self) -> None:
        """The paused job runs again: at its timer, or earlier by a person's `resume`."""
        timer, self.limit_timer = self.limit_timer, None
        self.status.paused_until_ms = None
        early = timer is not None and self._cancel_limit_timer(timer)
        self.recorder.event("usage_resumed", early=early)

    def _cancel_limit_timer(self, timer: str) -> bool:
        """Cancel the pause's timer if it is still pending; True if it was."""
        try:
            return (
                TimerStore(self.store.root, self.owner).cancel(timer, now_ms=self._now_ms()).changed
            )
        except (SpecialistsError, OSError) as exc:
            self.guard.report(f"the usage-limit timer {timer} could not be cancelled: {exc}")
            return False

    def _wait_out_hold(self) -> bool:
        """Before the agent starts: while its provider is held (another job met its usage
        limit), wait for the reset, saying so once. False: the job ended while held."""
        rec, st, j = self.record, self.status, self.recorder
        provider = holds.provider_of(rec.runner, rec.model)
        found = holds.held(self.store.root, provider, self._now_ms())
        if found is None:
            return True
        st.current_event, st.paused_until_ms = HELD_EVENT, found.until_ms
        at = clock_time(found.until_ms, self._now_ms())
        j.event("held", provider=provider, until_ms=found.until_ms, by=found.job)
        j.notice(f"held until {at}: {provider}'s usage limit (met by job {found.job}) resets then")
        self._save(force=True)
        while found is not None:
            self.guard.run("inbox", self._read_inbox)  # a stop ends it here
            if self.guard.signal is not None or self.ending is not None:
                final, error = (
                    (self.ending.final, self.ending.error) if self.ending else ("cancelled", None)
                )
                self._finish(final, error)
                return False
            self._nap_until(found.until_ms)
            found = holds.held(self.store.root, provider, self._now_ms())
        st.current_event, st.paused_until_ms = "starting", None
        j.event("hold_ended", provider=provider)
        return True

    def _take_over_pause(self) -> None:
        """The supervisor of a job paused at a usage limit died (store/recovery.py; this one
        was started by supervise/start.py `restart`, holding the lock): no agent runs, so
        wait out the pause here, then start the agent continuing its session."""
        j, rec, pid = self.recorder, self.record, os.getpid()
        st = self.store.read_status(rec.id)
        if st is None or st.paused_until_ms is None:
            self._finish("error", "supervisor crashed (its job was no longer paused)")
            return
        j.status = st
        for companion in self.companions:
            companion.use_status(st)
        st.supervisor_pid, st.supervisor_start_time = pid, process_start_time(pid)
        self.state.delivery = wake.delivery_mode(rec, True)
        if rec.keep_alive:  # its answers so far, numbered on (answers/NNN.txt)
            self.state.last_answer = self.store.latest_answer(rec.id)
            runs = [e.get("runs") for e in self.store.read_events(rec.id)]
            self.state.answers = max((n for n in runs if isinstance(n, int)), default=0)
        self.guard.run("timers", self._find_limit_timer)
        at = clock_time(st.paused_until_ms, self._now_ms())
        j.notice(f"the supervisor restarted; the job stays paused until {at} (usage limit)")
        self._save(force=True)
        task = self._wait_paused(st.paused_until_ms)
        if task is None:
            return
        resumed = rec.replace(resume_session=st.session_file or rec.resume_session)
        try:
            self.runner.start(launch_spec(resumed, j.job_dir, task, self.spend))
        except (SpecialistsError, OSError) as exc:
            why = exc.one_line() if isinstance(exc, SpecialistsError) else str(exc)
            self._finish("error", f"could not start the agent after the usage limit: {why}")
            return
        st.pid, st.agent_start_time = self.runner.handle.pid, self.runner.handle.start_time
        self._running_again(False, "follow_up")
        self._save(force=True)

    def _find_limit_timer(self) -> None:
        pending = TimerStore(self.store.root, self.owner).pending()
        self.limit_timer = next((t.id for t in pending if t.note == LIMIT_RESET), None)

    def _wait_paused(self, until_ms: int) -> str | None:
        """Wait for the reset with no agent running; the control inbox is read as always
        (a stop ends the job, a follow-up such as `resume` ends the wait early). The task to
        continue with, or None when the job ended."""
        situation = Situation(
            phase="waiting",
            keep_alive=self.record.keep_alive,
            runner=self.record.runner,
            accepts=frozenset({"follow_up"}),
            answered=self.state.last_answer is not None,
        )
        while self._now_ms() < until_ms:
            requests, problems = take_requests(self.recorder.job_dir)
            for problem in problems:
                self.recorder.notice(problem)
            for req in requests:
                decision = decide(req.kind, req.message, situation)
                self.recorder.event(f"{req.kind}_ack", **ack_fields(req.id, decision))
                if decision.kind == "stop_job" or self.guard.signal is not None:
                    self._finish("cancelled", None)
                    return None
                if decision.kind == "deliver" and isinstance(decision.command, FollowUp):
                    return decision.command.message  # resumed early by a person
            if self.guard.signal is not None:
                self._finish("cancelled", None)
                return None
            self._nap_until(until_ms)
        if self.limit_timer is not None:  # the reset came: this start is the wake-up
            self._cancel_limit_timer(self.limit_timer)
            self.limit_timer = None
        return LIMIT_RESET

    def _nap_until(self, until_ms: int) -> None:
        """One short sleep of a wait with no agent running (a hold, a pause): at most a few
        ticks, so the inbox is read again soon, and never past `until_ms`."""
        self.sleep(max(0.01, min(self.tick * 5, until_ms / 1000 - self.wall())))

    def _on_agent_exited(self, ev: AgentExited) -> None:
        self.status.exit_code = ev.exit_code if ev.signal is None else -ev.signal
        if self.ending is not None:
            self._finish(self.ending.final, self.ending.error)
        elif self._waiting() and self.state.last_answer is not None:
            self._finish("done", None)
        else:
            self._finish("error", ending.exit_message(ev))

    # --- control requests and follow-ups ----------------------------------------------

    def _read_inbox(self) -> None:
        requests, problems = take_requests(self.recorder.job_dir)
        for problem in problems:
            self.recorder.notice(problem)
        if requests:
            self._before_control_writes()
        for request in requests:
            self.guard.run("request", lambda r=request: self._on_request(r))  # type: ignore[misc]

    def _on_request(self, req: ControlRequest) -> None:
        situation = Situation(
            phase=self._phase(),
            keep_alive=self.record.keep_alive,
            runner=self.record.runner,
            accepts=self.runner.accepts(),
            answered=self.state.last_answer is not None,
        )
        decision = decide(req.kind, req.message, situation)
        if decision.kind == "deliver" and decision.command.kind != "follow_up":
            self._send(decision.command)  # sent before the ack, so the ack tells the truth
            if decision.command.kind == "steer":
                self.state.steers_out.append(req.id)
        self.recorder.event(f"{req.kind}_ack", **ack_fields(req.id, decision))
        self._act(req.id, decision)
        self._save(force=True)

    def _phase(self) -> Phase:
        status = "waiting" if self.state.waiting_for_work else self.status.status
        if self.ending is None and status in ("starting", "running", "waiting"):
            return cast(Phase, status)
        return "ending"

    def _act(self, request_id: str, d: Decision) -> None:
        if d.kind == "refuse" or d.kind == "nothing_to_do":
            return
        if d.kind == "deliver":
            if isinstance(d.command, FollowUp):
                self._send_follow_up(request_id, d.command.message)
        elif d.kind == "hold":
            self.state.held.append((request_id, d.message))
        elif d.kind == "stop_job":
            self._begin_stop(d.why)
        elif d.kind == "end_waiting":
            self._begin_end("done", None)
        elif d.kind == "pause":
            self.state.interrupted = True
            self._send(Abort())
        else:
            assert_never(d)

    def _send_held_follow_up(self) -> bool:
        request_id, message = self.state.held.popleft()
        if "follow_up" not in self.runner.accepts():
            self.state.held.appendleft((request_id, message))
            self._drop_held(f"the {self.record.runner} runner takes no follow-up after this run")
            return False
        self._send_follow_up(request_id, message)
        return True

    def _send_follow_up(self, request_id: str, message: str) -> None:
        s = self.state
        try:
            self._send(FollowUp(message))  # one-shot runners start a new process here
        except SpecialistsError as exc:
            self._on_run_failed(f"the follow-up could not start: {exc.one_line()}")
            return
        paused = self.paused_at if s.interrupted else None
        if paused is not None:  # the pause stopped the run's clock: the rest of its deadline
            self.run_started += self.clock() - paused
        self._running_again(paused is not None, "follow_up")
        s.interrupted = False  # resumed: this run ends the job as any run would
        self.paused_at = None
        self.recorder.event("follow_up_sent", request=request_id)
        self._save(force=True)

    def _drop_held(self, why: str) -> None:
        while self.state.held:
            request_id, _ = self.state.held.popleft()
            self.recorder.event("follow_up_dropped", request=request_id, reason=why)

    def _send(self, command: Command) -> bool:
        """Send `command` if the runner takes it now (a ladder step it refuses is skipped)."""
        if command.kind not in self.runner.accepts():
            log.debug("runner does not take %s now; skipped", command.kind)
            return False
        self.runner.send(command)
        return True

    def _agent_took_steer(self, accepted: bool, why: str = "") -> None:
        """The agent acknowledged (or rejected) the oldest steer it was handed."""
        if not self.state.steers_out:
            return  # a steer of its own making (an event delivered as a steer by pi's extension)
        request_id = self.state.steers_out.popleft()
        if accepted:
            self.recorder.event("steer_delivered", request=request_id)
        else:
            reason = why or "the agent rejected it"
            self.recorder.event("steer_failed", request=request_id, reason=reason)

    # --- waiting between runs ---------------------------------------------------------

    def _after_run(self) -> None:
        """The run is over and no follow-up is held: wait for work, wait, or end."""
        s = self.state
        if s.delivery is None:
            s.delivery = wake.delivery_mode(self.record, "follow_up" in self.runner.accepts())
        if s.delivery == "agent":
            # The extension may be starting a run for an event right now: decide on the next
            # step, after reading what pi said meanwhile (_recheck).
            self._wait_for_work("what the agent does next")
            self.recheck_at = self.clock()
            return
        pending = self._pending()
        if pending is not None:
            self._follow(wake.after_run(self._situation(pending), self._now_ms()))

    def _situation(self, pending: Pending) -> wake.WakeSituation:
        s = self.state
        return wake.WakeSituation(
            pending=pending,
            answered=s.last_answer is not None,
            yielded=s.yielded,
            nudged=s.nudged,
            keep_alive=self.record.keep_alive,
            mode=s.delivery or "none",
        )

    def _follow(self, step: wake.Next) -> None:
        match step:
            case wake.WaitForWork(why=why):
                self._wait_for_work(why)
            case wake.WaitForFollowUp():
                self._wait_for_follow_up()
            case wake.Nudge():
                self.state.nudged = True
                self._emit_own(wake.NOTHING_PENDING)
                self._wait_for_work("the agent's answer (told that nothing is pending)")
            case wake.End(final=final, error=error):
                self._begin_end(final, error)
            case _:
                assert_never(step)

    def _wait_for_work(self, why: str) -> None:
        st, s = self.status, self.state
        first = not s.waiting_for_work
        if not first and why == s.why:
            return  # a recheck that found the same: nothing to log or rewrite
        self.recorder.event("waiting", reason="events", why=why)
        s.waiting_for_work, s.why = True, why
        # Still at work for everyone outside (`result --wait` waits on, views say for what):
        # `waiting` is the keep-alive job's wait for a follow-up, with an answer to read.
        st.status, st.current_event, st.current_tool = "running", wake.WAITING_EVENT, why
        if first:
            s.idle_since = self.clock()
            self.recheck_at = self.clock() + wake.RECHECK_S
        self._save(force=True)

    def _wait_for_follow_up(self, *, paused: bool = False, event: str = PAUSED_EVENT) -> None:
        """Wait for a follow-up: the run answered, or (`paused`) an interrupt cut it."""
        st, s, j = self.status, self.state, self.recorder
        answered = ending.job_end(
            j, self.guard, "waiting", None, s.last_answer, self.wall, s.answers
        )
        if not paused:  # an answer: what features do at each (a checkpoint commit)
            for hook in HOOKS.answered:
                self.guard.run("answered", lambda hook=hook: hook(answered))  # type: ignore[misc]
        s.waiting_for_work = False
        st.status = "waiting"
        st.current_event = event if paused else "waiting"
        st.current_tool = None
        s.idle_since = self.clock()
        j.event("waiting", **({"paused": True} if paused else {}))
        self._save(force=True)
        self._report(news.tell(answered))  # the orchestrator hears of each answer, not only the end

    def _listening(self) -> bool:
        """Waiting for events the supervisor delivers: the step waits on them."""
        return self.ending is None and self._waiting() and self.state.delivery == "supervisor"

    def _listen(self) -> None:
        """Wait up to a tick for the job's events (firing its due timers); deliver them."""
        check_owner_dir(self.store.root, self.owner)
        stop = self.guard  # a signal ends the wait at once
        until = lambda: stop.signal is not None  # noqa: E731
        if self.watch.wait(self.tick, now=self.wall, sleep=self.sleep, until=until):
            self._deliver()

    def _recheck(self) -> None:
        self.recheck_at = self.clock() + wake.RECHECK_S
        pending = self._pending()
        if pending is None or not self.state.waiting_for_work:
            return
        if self.state.delivery == "agent":
            # Read pi's output only now: a run the extension started for an event that left
            # the inbox before the snapshot has announced itself by then.
            for ev in self.runner.poll(0.0):
                self._on_runner_event(ev)
                if self.recorder.finished or not self.state.waiting_for_work:
                    return
        elif pending.events:
            return  # the next wait delivers them
        self._follow(wake.after_run(self._situation(pending), self._now_ms()))

    def _deliver(self) -> None:
        if "follow_up" not in self.runner.accepts():
            self.sleep(self.tick)  # it will again; never spin on a pending inbox
            return
        resumes_work = self.state.waiting_for_work
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
            self.recorder.notice(f"inbox of {self.owner}: {problem}")
        if not done.ids:
            return
        self.recorder.event("woken", events=list(done.ids), kinds=sorted(set(done.kinds)))
        self._running_again(resumes_work, "woken")
        self._save(force=True)

    def _waiting(self) -> bool:
        """Between runs: waiting for a follow-up, or for events of pending work."""
        return self.state.waiting_for_work or self.status.status == "waiting"

    def _running_again(self, resumes_work: bool, event: str) -> None:
        st = self.status
        if st.paused_until_ms is not None:
            self._resumed_from_limit()
        st.status, st.current_event, st.current_tool = "running", event, None
        self.state.waiting_for_work = False
        self.state.idle_since = None
        if not resumes_work:
            self.run_started = self.clock()  # a new piece of work: its own timeout

    def _pending(self) -> Pending | None:
        """What can still wake the job; None when it cannot wait at all (the job then ends)."""
        try:
            pending = pending_work(self.store, self.owner, own_id=self.record.id)
        except (StoreError, OSError) as exc:
            why = exc.one_line() if isinstance(exc, StoreError) else str(exc)
            self.recorder.notice(f"cannot wait for events: {why}")
            if self.state.last_answer is not None:
                self._begin_end("done", None)
            else:
                self._begin_end("error", f"cannot wait for events: {why}")
            return None
        self._report(list(pending.problems))
        at = pending.next_due_ms
        self.next_due = None if at is None else self.clock() + (at / 1000 - self.wall())
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

    def _on_clock(self, wall_ms: int | None) -> float | None:
        """A wall-clock time (ms) on the supervisor's own clock."""
        return None if wall_ms is None else self.clock() + (wall_ms / 1000 - self.wall())

    # --- checkpoints and status -------------------------------------------------------

    def _checkpoint(self, then: str = "output") -> None:
        if self.checkpoints is None or self.recorder.finished:
            return
        assert isinstance(self.runner, HostedRunner)
        run_ms = now_ms() - int((self.clock() - self.run_started) * 1000)
        self.checkpoints.take(
            self.runner,
            then,
            ending=self.ending is not None,
            answer=self.state.last_answer,
            run_started_ms=run_ms,
            # The open window of words travels too: a successor replays only what follows.
            job={**self.state.to_dict(self.clock()), "words": self.recorder.words.state()},
        )

    def _before_control_writes(self) -> None:
        """A checkpoint before the agent is written to for a request (checkpoint.py)."""
        if self.checkpoints is not None:
            self.guard.run("checkpoint", lambda: self._checkpoint("requests"))

    def _save(self, *, force: bool = False) -> None:
        self.recorder.save(self.runner.handle, force=force)

    # --- ending -----------------------------------------------------------------------

    def _begin_ending(
        self, final: FinalStatus, error: str | None, ladder: tuple[Ladder, float]
    ) -> None:
        self._drop_held("the job is ending")
        self.ending = plan_ending(final, error, ladder, self.clock())
        self.guard.answered()
        self._act_on_due()  # the ladder's first step is due at once

    def _begin_end(self, final: FinalStatus, error: str | None) -> None:
        """A run ended normally or with an agent error: close the agent politely."""
        self.status.current_event = "closing"
        self._begin_ending(final, error, CLOSE_LADDER)

    def _begin_stop(self, why: str) -> None:
        """Graceful stop: abort the run, then SIGTERM, then SIGKILL."""
        self.recorder.event("stopping", reason=why)
        self.status.current_event = "stopping"
        self._begin_ending("cancelled", None, STOP_LADDER)
        self._save(force=True)

    def _stop_with(self, error: str) -> None:
        """A companion ends the job (a spend ceiling reached): as a stop, with an error."""
        finished = self.recorder.finished
        if self.status.status == "starting" and not finished:  # no agent to stop yet
            self._finish("error", error)
        elif self.ending is None and not finished:
            self.recorder.event("stopping", reason=error)
            self.status.current_event = "stopping"
            self._begin_ending("error", error, STOP_LADDER)
            self._save(force=True)

    def _begin_kill(self, final: FinalStatus, error: str) -> None:
        """Timeout, stall kill or a broken runner: no politeness."""
        self._begin_ending(final, error, KILL_LADDER)

    def _finish(self, final: str, error: str | None) -> None:
        s = self.state
        if self.limit_timer is not None:  # stopped while paused: nothing is to wake it
            self._cancel_limit_timer(self.limit_timer)
            self.limit_timer = None
        self.status.paused_until_ms = None
        ending.finish(
            self.recorder,
            self.runner,
            self.guard,
            final,
            error,
            answer=s.last_answer,
            runs=s.answers,
            wall=self.wall,
        )

    def _abandon_after(self, exc: Exception) -> None:
        """The loop raised `exc`: a full disk is one logged line (no traceback in the
        foreground) and the job's named cause; anything else is a bug with its traceback.
        The agent is killed and the error recorded."""
        if is_out_of_space(exc):
            log.warning("job %s: %s", self.record.id, exc)
        else:
            log.exception("supervisor failed")
        bug = f"bug: supervisor failed: {exc.__class__.__name__}: {exc}"
        self.guard.run("kill after a supervisor failure", lambda: self.runner.send(Kill()))
        if not self.recorder.finished:
            self._finish("error", failure_reason(exc, bug))
