"""The lifecycle of one job: drive a runner, record what happens, end exactly once.

Single-threaded by design. Each step of the loop pumps the runner (which waits at most `tick`
seconds), reads the control inbox, waits for the events of the job's pending work where the
supervisor delivers them, then asks `due` (due.py) what is due now and acts on each item.
Every way a job ends goes through `finish` (ending.py), which writes the final status and
event last. No step can kill the loop, and a stuck step still lets SIGTERM through (steps.py).

The `Supervisor` holds the job's state; its parts are fields, each in a module of its own:
the recorder (what it writes), the runner, the step guard, the checkpointer (a remote job
another supervisor can take over after a crash: checkpoint.py), the control inbox (requests
and follow-ups: control_inbox.py), what it does between runs (between_runs.py, over the wake
watch of the job's timers and inbox), the companions and pauses features run beside the job
(hooks.py), and `JobState`, what a checkpoint carries. How it takes the job up, fresh or
taken over, is beginning.py.

Control requests (steer, follow-up, abort, interrupt, stop) are decided at once and
acknowledged by an event; a follow-up that arrives while a run is going is held and sent when
that run ends, so each gets a run of its own. Once a run has answered, that answer is the
job's result until a later run answers: a later run that fails, times out or is stopped is
recorded (`run_error`), never the job's end state. A run that ends with pending work (timers,
inbox events, jobs the job owns) does not end the job: it waits (between_runs.py), bounded by
the job's timeout and its idle limit (due.py). A run that fails may pause the job instead
(an interrupt; a feature's pause, such as a usage limit's: HOOKS.pauses).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import assert_never

from specialists.base.lazy import logger
from specialists.events.owners import check_owner
from specialists.events.wake import WakeWatch
from specialists.runners.base import (
    Activity,
    AgentExited,
    AgentRunner,
    AnswerDelta,
    Close,
    Command,
    HostedRunner,
    Kill,
    RunFinished,
    RunnerEvent,
    SpendLimit,
    Usage,
)
from specialists.store.files import is_out_of_space
from specialists.store.jobs import JobStore, now_ms
from specialists.store.records import PAUSED_EVENT, JobRecord, JobStatus
from specialists.store.writer import failure_reason
from specialists.supervise import beginning, ending
from specialists.supervise.between_runs import BetweenRuns
from specialists.supervise.checkpoint import Checkpointer
from specialists.supervise.control_inbox import ControlInbox
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
from specialists.supervise.hooks import HOOKS, Companion, CompanionContext, Pauser
from specialists.supervise.job_state import JobState
from specialists.supervise.pending import check_owner_dir
from specialists.supervise.recorder import Observer, Recorder, add_usage, note_activity
from specialists.supervise.steps import StepGuard, signal_name

__all__ = ["JobState", "Observer", "Supervisor"]  # JobState: supervise/job_state.py

log = logger("specialists.supervisor")


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
        self.owner = check_owner(f"job-{record.id}")
        self.watch = WakeWatch(store.root, self.owner)
        self.checkpoints = Checkpointer(self.recorder) if isinstance(runner, HostedRunner) else None
        self.inbox = ControlInbox(self)
        self.between = BetweenRuns(self)
        self.spend = SpendLimit()
        context = CompanionContext(
            store, record, self.status, clock, wall, self.recorder.event, self.stop_with,
            self.spend,
        )  # fmt: skip
        self.companions: list[Companion] = [
            c for make in HOOKS.companions if (c := make(context)) is not None
        ]
        self.pauses: list[Pauser] = [p for make in HOOKS.pauses if (p := make(self)) is not None]

    @property
    def status(self) -> JobStatus:
        return self.recorder.status

    def run(self) -> JobStatus:
        self.guard.install(on_second_interrupt=lambda: self.runner.send(Kill()))
        try:
            beginning.take_over(self) if self.reattach else beginning.begin(self)
            while not self.recorder.finished:
                self._step()
        except Exception as exc:  # noqa: BLE001 - logged (with its traceback if a bug) there
            self._abandon_after(exc)
        finally:
            self.guard.uninstall()
            self.recorder.writer.close()
        return self.status

    # --- the loop ---------------------------------------------------------------------

    def _step(self) -> None:
        events: list[RunnerEvent] = []
        # Where the supervisor delivers events, the wait for them (below) is the step's wait.
        poll_s = 0.0 if self.between.listening() else self.tick
        if not self.guard.run("runner", lambda: events.extend(self.runner.poll(poll_s))):
            self.sleep(self.tick)  # a broken runner returns at once: do not spin on it
            if self.ending is None:
                bug = f"bug: the {self.record.runner} runner failed"
                self.begin_kill("error", failure_reason(self.guard.last_failure, bug))
        for ev in events:
            handled = self.guard.run("event", lambda ev=ev: self.on_runner_event(ev))  # type: ignore[misc]
            if not handled and ev.kind in ("run_finished", "agent_exited") and self.ending is None:
                self.begin_kill("error", f"bug: handling the agent's {ev.kind} failed")
            if self.recorder.finished:
                return
        self.guard.run("inbox", self.inbox.read)
        if self.guard.signal is not None and self.ending is None:
            self.begin_stop(f"stopped by {signal_name(self.guard.signal)}")
        if self.guard.signal is not None:
            self.guard.answered()  # a stop, or an ending already under way
        if self.between.listening() and not self.guard.run("wake", self.between.listen):
            self.sleep(self.tick)  # a broken inbox must not make the wait spin
        if not self.recorder.finished:
            self.act_on_due()

    def act_on_due(self) -> None:
        now, ending, st, s, b = self.clock(), self.ending, self.status, self.state, self.between
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
            wake_due=b.next_due,
            recheck_at=b.recheck_at,
            agent_delivers=s.delivery == "agent",
            hosted=self.checkpoints is not None,
            companions=bool(self.companions),
            paused_until=self.on_clock(st.paused_until_ms),
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
                self.watch.look(self.now_ms())
            case "recheck":
                self.between.recheck()
            case LadderDue(command=command):
                self.send(command)
            case "give_up":
                if self.ending is not None:
                    self.finish(self.ending.final, self.ending.error)
            case RunTimedOut(limit_ms=limit_ms):
                self.begin_kill("error", f"timeout after {limit_ms / 1000:g}s")
            case StallBegan(quiet_ms=quiet_ms, kill=kill):
                self.status.stalled = True
                self.recorder.event("stalled", quiet_ms=quiet_ms)
                self.save(force=True)
                if kill:
                    self.begin_kill("error", f"stalled: no agent output for {quiet_ms / 1000:.0f}s")
            case IdleTimedOut(idle_ms=idle_ms):
                self.recorder.event("idle_timeout", idle_ms=idle_ms)
                limit, s = f"{idle_ms / 1000:g} s", self.state
                if s.interrupted and s.last_answer is None:
                    self.begin_end("error", f"interrupted, and not resumed within {limit}")
                elif s.waiting_for_work and s.last_answer is None:
                    self.begin_end("error", f"no event within the idle limit ({limit}): {s.why}")
                else:
                    self.begin_end("done", None)
            case "save":
                self.save(force=True)
            case "checkpoint":
                self.checkpoint()
            case "attend":
                running = self.status.status == "running" and not self.state.waiting_for_work
                if any([c.tick(running) for c in self.companions]):
                    self.save(force=True)
            case _:
                assert_never(item)

    # --- the runner's events ----------------------------------------------------------

    def on_runner_event(self, ev: RunnerEvent) -> None:
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
        if ev.event == "run_start" and self.between.waiting():  # a run the agent started
            self.between.running_again(self.state.waiting_for_work, "woken")  # (pi's extension)
            self.save(force=True)
        elif ev.event == "steer_ack":
            self.inbox.agent_took_steer(True)
        elif ev.event == "notice" and ev.fields.get("message") == "steer rejected":
            self.inbox.agent_took_steer(False, str(ev.fields.get("error") or ""))
        note_activity(self.status, ev)
        # Control acknowledgements are the supervisor's to log, with the request id.
        if ev.log and ev.event != "steer_ack":
            j.event(ev.event, **dict(ev.fields))
            self.save(force=True)
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
            self.send(Close())
            return
        if ev.error:
            self.on_run_failed(ev.error)
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
        if s.held and self.inbox.send_held_follow_up():
            return
        self.between.after_run()

    def on_run_failed(self, error: str) -> None:
        s, j = self.state, self.recorder
        self.inbox.drop_held(f"the run before it ended: {error}")
        if error != "aborted" and any(p.run_failed(error) for p in self.pauses):
            return  # paused instead (a usage limit until its reset)
        if error == "aborted" and s.interrupted:
            # A soft interrupt: the job pauses, resumable with a follow-up or `resume`.
            j.event("interrupted")
            self.inbox.paused_at = self.clock()
            self.pause(PAUSED_EVENT)
            return
        if self.record.keep_alive and (error == "aborted" or s.last_answer is not None):
            # The job lives on: an aborted run, or a later run failing, leaves it waiting
            # with its answers as they were.
            if error == "aborted":
                j.event("aborted")
            else:
                j.event("run_error", error=error)
            self.between.wait_for_follow_up()
            return
        self.begin_end("error", error)

    def pause(self, event: str, until_ms: int | None = None) -> None:
        """The run was cut short and the job waits for a follow-up (or, `until_ms`, for the
        wake-up a pause's feature set): what waits on its turn ends (HOOKS.paused)."""
        s = self.state
        paused = ending.job_end(
            self.recorder, self.guard, "interrupted", None, s.last_answer, self.wall, s.answers
        )
        for hook in HOOKS.paused:  # open asks end, as at an interrupt
            self.guard.run("pausing", lambda hook=hook: hook(paused))  # type: ignore[misc]
        if until_ms is not None:
            self.status.paused_until_ms = until_ms
        self.between.wait_for_follow_up(paused=True, event=event)

    def _on_agent_exited(self, ev: AgentExited) -> None:
        self.status.exit_code = ev.exit_code if ev.signal is None else -ev.signal
        if self.ending is not None:
            self.finish(self.ending.final, self.ending.error)
        elif self.between.waiting() and self.state.last_answer is not None:
            self.finish("done", None)
        else:
            self.finish("error", ending.exit_message(ev))

    def send(self, command: Command) -> bool:
        """Send `command` if the runner takes it now (a ladder step it refuses is skipped)."""
        if command.kind not in self.runner.accepts():
            log.debug("runner does not take %s now; skipped", command.kind)
            return False
        self.runner.send(command)
        return True

    # --- time, checkpoints and status -------------------------------------------------

    def now_ms(self) -> int:
        return int(self.wall() * 1000)

    def on_clock(self, wall_ms: int | None) -> float | None:
        """A wall-clock time (ms) on the supervisor's own clock."""
        return None if wall_ms is None else self.clock() + (wall_ms / 1000 - self.wall())

    def checkpoint(self, then: str = "output") -> None:
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

    def before_control_writes(self) -> None:
        """A checkpoint before the agent is written to for a request (checkpoint.py)."""
        if self.checkpoints is not None:
            self.guard.run("checkpoint", lambda: self.checkpoint("requests"))

    def save(self, *, force: bool = False) -> None:
        self.recorder.save(self.runner.handle, force=force)

    # --- ending -----------------------------------------------------------------------

    def _begin_ending(
        self, final: FinalStatus, error: str | None, ladder: tuple[Ladder, float]
    ) -> None:
        self.inbox.drop_held("the job is ending")
        self.ending = plan_ending(final, error, ladder, self.clock())
        self.guard.answered()
        self.act_on_due()  # the ladder's first step is due at once

    def begin_end(self, final: FinalStatus, error: str | None) -> None:
        """A run ended normally or with an agent error: close the agent politely."""
        self.status.current_event = "closing"
        self._begin_ending(final, error, CLOSE_LADDER)

    def begin_stop(self, why: str) -> None:
        """Graceful stop: abort the run, then SIGTERM, then SIGKILL."""
        self.recorder.event("stopping", reason=why)
        self.status.current_event = "stopping"
        self._begin_ending("cancelled", None, STOP_LADDER)
        self.save(force=True)

    def stop_with(self, error: str) -> None:
        """A companion ends the job (a spend ceiling reached): as a stop, with an error."""
        finished = self.recorder.finished
        if self.status.status == "starting" and not finished:  # no agent to stop yet
            self.finish("error", error)
        elif self.ending is None and not finished:
            self.recorder.event("stopping", reason=error)
            self.status.current_event = "stopping"
            self._begin_ending("error", error, STOP_LADDER)
            self.save(force=True)

    def begin_kill(self, final: FinalStatus, error: str) -> None:
        """Timeout, stall kill or a broken runner: no politeness."""
        self._begin_ending(final, error, KILL_LADDER)

    def finish(self, final: str, error: str | None) -> None:
        for pause in self.pauses:  # stopped while paused: nothing is to wake it
            pause.ended()
        self.status.paused_until_ms = None
        s = self.state
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
            self.finish("error", failure_reason(exc, bug))
