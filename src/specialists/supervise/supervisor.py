"""The lifecycle of one job: drive a runner, record what happens, end exactly once.

Single-threaded by design: the loop pumps the runner (which waits at most `tick` seconds),
then reads the control inbox, then checks signals and timers. Every way a job can end goes
through `_finish`, which writes the final status and event last, so a reader that sees a
terminal status also sees everything that led to it.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

from specialists.errors import AgentUnavailable, SpecialistsError
from specialists.jobs.control import ControlRequest, take_requests
from specialists.jobs.liveness import process_start_time
from specialists.jobs.proctree import kill_job
from specialists.jobs.records import JobRecord, JobStatus
from specialists.jobs.store import ANSWERS_DIR, JobStore, JobWriter, now_ms
from specialists.runners.base import (
    Activity,
    AgentExited,
    LaunchSpec,
    RunFinished,
    Runner,
    RunnerEvent,
    TextDelta,
    Usage,
)
from specialists.supervise.plan import PRE_SCRIPT_TOKEN
from specialists.supervise.scripts import run_script

log = logging.getLogger("specialists.supervisor")


DEFAULT_IDLE_TIMEOUT_MS = 10 * 60 * 1000
STATUS_ONLY_MIN_INTERVAL = 0.25  # seconds between status rewrites for status-only changes
HEARTBEAT_INTERVAL = 5.0  # rewrite status (elapsed_s) at least this often while active
STOP_GRACE = 3.0  # abort -> SIGTERM -> SIGKILL, this many seconds apart
CLOSE_GRACE = 5.0  # after a run: EOF -> SIGTERM -> SIGKILL


class Observer(Protocol):
    """Someone watching in-process (the foreground CLI)."""

    def on_text(self, text: str) -> None: ...

    def on_event(self, event: dict[str, object]) -> None: ...


@dataclass
class _Ending:
    """A decided end, waiting for the agent process to go."""

    final: str  # done | error | cancelled
    error: str | None
    steps: deque[tuple[float, Callable[[], None]]]


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def exit_message(ev: AgentExited) -> str:
    if ev.signal is not None:
        what = f"agent killed by {_signal_name(ev.signal)}"
    else:
        what = f"agent exited with code {ev.exit_code}"
    tail = [ln for ln in ev.stderr_tail.strip().splitlines() if ln.strip()]
    detail = f": {tail[-1][:300]}" if tail else ""
    return f"{what} before finishing{detail}"


class Supervisor:
    def __init__(
        self,
        store: JobStore,
        record: JobRecord,
        runner: Runner,
        *,
        observer: Observer | None = None,
        tick: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
        handle_signals: bool = True,
    ) -> None:
        self.store = store
        self.record = record
        self.runner = runner
        self.observer = observer
        self.tick = tick
        self.clock = clock
        self.handle_signals = handle_signals
        self.job_dir = store.job_dir(record.id)
        self.writer = JobWriter(store, record.id)
        previous = store.read_status(record.id)
        self.status = previous or JobStatus(id=record.id, specialist=record.specialist)
        self.finished = False
        self.last_answer: str | None = None
        self.follow_ups: deque[tuple[str, str]] = deque()  # (request id, message)
        self._ending: _Ending | None = None
        self._signal: int | None = None  # set by the handler, read by the loop
        self._saved_at = 0.0
        self._dirty = False
        self._last_event_mono = clock()
        self._idle_since: float | None = None
        self._run_started_mono = clock()
        self._answers = 0

    # --- entry ------------------------------------------------------------------------

    def run(self) -> JobStatus:
        previous: dict[signal.Signals, Any] = {}
        if self.handle_signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, self._on_signal)
        try:
            self._begin()
            while not self.finished:
                self._step()
        except Exception as exc:
            log.exception("supervisor failed")
            self._abandon(f"bug: supervisor failed: {exc.__class__.__name__}: {exc}")
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.writer.close()
        return self.status

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        if self._signal is not None and signum == signal.SIGINT:
            self.runner.kill()  # a second Ctrl-C: no more patience
        self._signal = signum

    # --- start ------------------------------------------------------------------------

    def _begin(self) -> None:
        rec = self.record
        st = self.status
        st.status = "starting"
        st.runner = rec.runner
        st.model = rec.model
        st.backend = rec.model.split("/", 1)[0] if rec.model and "/" in rec.model else rec.runner
        st.supervisor_pid = os.getpid()
        st.supervisor_start_time = process_start_time(os.getpid())
        st.started_at_ms = st.started_at_ms or now_ms()
        st.cwd = rec.cwd
        st.parent_id = rec.parent_id
        st.bead_id = rec.bead_id
        st.keep_alive = rec.keep_alive
        self._event(
            "starting", specialist=rec.specialist, model=rec.model, runner=rec.runner, id=rec.id
        )
        self._save(force=True)

        task = self._run_pre_scripts(rec.task)
        if self._signal is not None:
            self._finish("cancelled", None)
            return
        spec = LaunchSpec(
            job_id=rec.id,
            job_dir=self.job_dir,
            cwd=Path(rec.cwd),
            prompt=task,
            system_prompt=rec.system_prompt,
            model=rec.model,
            permission=rec.permission,
            thinking_level=rec.thinking_level,
            skill_paths=tuple(Path(p) for p in rec.skill_paths),
            # `runner: {type: pi, args: [...]}`: appended to the agent's command line (the
            # command runner reads them from its options as the command's own arguments).
            extra_args=() if rec.runner == "command" else tuple(rec.runner_options.get("args", ())),
            resume_session=rec.resume_session,
            max_turns=rec.max_turns,
            max_tokens=rec.max_tokens,
            fallback_model=rec.fallback_model,
            response_format=rec.response_format,
            options=rec.runner_options,
        )
        try:
            self.runner.start(spec)
        except AgentUnavailable as exc:
            self._finish("error", exc.one_line())
            return
        except SpecialistsError as exc:
            self._finish("error", exc.one_line())
            return
        pid = self.runner.pid
        st.pid = pid
        st.agent_start_time = process_start_time(pid) if pid else None
        st.session_file = self.runner.session_ref
        st.status = "running"
        st.current_event = "running"
        self._run_started_mono = self.clock()
        self._save(force=True)

    def _run_pre_scripts(self, task: str) -> str:
        injected: list[str] = []
        for script in self.record.pre_scripts:
            outcome = run_script(str(script["path"]), Path(self.record.cwd))
            self._event(
                "script",
                phase="pre",
                command=outcome.command,
                exit_code=outcome.exit_code,
                error=outcome.error,
            )
            if outcome.error:
                self.status.error = f"pre-script {outcome.command!r} failed: {outcome.error}"
            if script.get("inject_output"):
                injected.append(outcome.output.rstrip())
        return task.replace(PRE_SCRIPT_TOKEN, "\n\n".join(injected)).rstrip()

    def _run_post_scripts(self) -> None:
        for script in self.record.post_scripts:
            outcome = run_script(str(script["path"]), Path(self.record.cwd))
            self._event(
                "script",
                phase="post",
                command=outcome.command,
                exit_code=outcome.exit_code,
                error=outcome.error,
            )

    # --- the loop ---------------------------------------------------------------------

    def _step(self) -> None:
        for ev in self.runner.poll(self.tick):
            self._on_runner_event(ev)
            if self.finished:
                return
        self._read_inbox()
        if self._signal is not None and self._ending is None:
            self._begin_stop(f"stopped by {_signal_name(self._signal)}")
        self._check_timers()
        since_save = self.clock() - self._saved_at
        if since_save >= HEARTBEAT_INTERVAL or (
            self._dirty and since_save >= STATUS_ONLY_MIN_INTERVAL
        ):
            self._save(force=True)

    def _on_runner_event(self, ev: RunnerEvent) -> None:
        self._last_event_mono = self.clock()
        st = self.status
        st.last_event_at_ms = now_ms()
        if st.stalled:
            st.stalled = False
            self._dirty = True
        if isinstance(ev, TextDelta):
            if self.observer:
                self.observer.on_text(ev.text)
            if st.current_event != "text":
                st.current_event = "text"
                self._dirty = True
        elif isinstance(ev, Activity):
            self._on_activity(ev)
        elif isinstance(ev, Usage):
            self._add_usage(ev)
        elif isinstance(ev, RunFinished):
            self._on_run_finished(ev)
        elif isinstance(ev, AgentExited):
            self._on_agent_exited(ev)
        else:  # pragma: no cover - closed union
            raise AssertionError(f"bug: unknown runner event {ev!r}")

    def _on_activity(self, ev: Activity) -> None:
        st = self.status
        kind = ev.event
        if kind in ("toolcall", "tool_execution", "thinking", "text", "tool_execution_end"):
            st.current_event = kind
        # Keep the toolcall's `bash(echo hi)` while the agent reports plain `bash` running.
        keep = bool(
            st.current_tool
            and ev.current_tool
            and st.current_tool.startswith(ev.current_tool + "(")
        )
        if ev.current_tool is not None and not keep:
            st.current_tool = ev.current_tool
        elif kind == "tool_execution_end":
            st.current_tool = None
        if ev.log and kind == "toolcall":  # status-only toolcall hints precede the real one
            st.tool_calls += 1
        if ev.log and kind == "turn_end":
            st.turns += 1
        # Control acknowledgements are the supervisor's to log, with the request id.
        if ev.log and kind != "steer_ack":
            self._event(kind, **dict(ev.fields))
            self._save(force=True)
        else:
            self._dirty = True

    def _add_usage(self, ev: Usage) -> None:
        t = self.status.tokens
        for key, value in (
            ("input", ev.input_tokens),
            ("output", ev.output_tokens),
            ("cache_read", ev.cache_read_tokens),
            ("cache_write", ev.cache_write_tokens),
        ):
            if value:
                t[key] = t.get(key, 0) + value
        self.status.cost_usd = round(self.status.cost_usd + ev.cost_usd, 6)
        self._dirty = True

    def _on_run_finished(self, ev: RunFinished) -> None:
        if ev.session_file:
            self.status.session_file = ev.session_file
        if self._ending is not None:
            if self._ending.final == "done" and not ev.error:
                # A steer that raced the end of the run was answered: that is the last word.
                self.last_answer = ev.text or ""
            # Otherwise (stop, timeout) the agent answered the abort; let it go.
            self.runner.close()
            return
        if ev.error:
            if self.record.keep_alive and ev.error == "aborted":
                self._event("aborted")
                self._wait_for_follow_up()
                return
            self._begin_end("error", ev.error)
            return
        text = ev.text or ""
        self.last_answer = text
        self._event("run_end", chars=len(text), runs=self._answers + 1)
        self._answers += 1
        if self.follow_ups:
            self._send_follow_up(*self.follow_ups.popleft())
        elif self.record.keep_alive:
            self._write_answer(text)
            self._wait_for_follow_up()
        else:
            self._begin_end("done", None)

    def _on_agent_exited(self, ev: AgentExited) -> None:
        self.status.exit_code = ev.exit_code if ev.signal is None else -ev.signal
        if self._ending is not None:
            self._finish(self._ending.final, self._ending.error)
        elif self.status.status == "waiting" and self.last_answer is not None:
            self._finish("done", None)
        else:
            self._finish("error", exit_message(ev))

    def _wait_for_follow_up(self) -> None:
        self.status.status = "waiting"
        self.status.current_event = "waiting"
        self.status.current_tool = None
        self._idle_since = self.clock()
        self._event("waiting")
        self._save(force=True)
        self.writer.mark_ready()  # the orchestrator hears of each answer, not only the end

    def _send_follow_up(self, request_id: str, message: str) -> None:
        try:
            self.runner.follow_up(message)  # one-shot runners start a new process here
        except SpecialistsError as exc:
            self._begin_end("error", exc.one_line())
            return
        self.status.status = "running"
        self.status.current_event = "follow_up"
        self._idle_since = None
        self._run_started_mono = self.clock()
        self._event("follow_up_sent", request=request_id)
        self._save(force=True)

    def _write_answer(self, text: str) -> None:
        answers = self.job_dir / ANSWERS_DIR
        answers.mkdir(exist_ok=True)
        from specialists.jobs.atomic import write_atomic

        write_atomic(answers / f"{self._answers:03d}.txt", text.encode("utf-8"))

    # --- control inbox ----------------------------------------------------------------

    def _read_inbox(self) -> None:
        requests, problems = take_requests(self.job_dir)
        for problem in problems:
            self._event("notice", message=problem)
        for request in requests:
            self._on_request(request)

    def _on_request(self, req: ControlRequest) -> None:
        st = self.status
        if self._ending is not None or self.finished:
            self._event(f"{req.kind}_ack", request=req.id, delivered=False, reason="job is ending")
            return
        if req.kind == "stop":
            self._event("stop_ack", request=req.id, delivered=True)
            if st.status == "waiting":
                self._begin_end("done", None)
            else:
                self._begin_stop("stopped by request")
        elif req.kind == "abort":
            self._event("abort_ack", request=req.id, delivered=True)
            if st.status == "waiting":
                return
            if self.record.keep_alive:
                self.runner.abort()
            else:
                self._begin_stop("aborted by request")
        elif req.kind == "steer":
            if st.status != "running":
                reason = "job is not running a turn; use follow-up"
                self._event("steer_ack", request=req.id, delivered=False, reason=reason)
            elif not self.runner.supports_steer:
                reason = f"the {self.record.runner} runner cannot be steered; use follow-up"
                self._event("steer_ack", request=req.id, delivered=False, reason=reason)
            else:
                self.runner.steer(req.message)
                self._event("steer_ack", request=req.id, delivered=True)
        elif req.kind == "follow_up":
            if st.status == "waiting":
                self._event("follow_up_ack", request=req.id, delivered=True)
                self._send_follow_up(req.id, req.message)
            else:
                self.follow_ups.append((req.id, req.message))
                self._event("follow_up_ack", request=req.id, delivered=True, queued=True)
        self._save(force=True)

    # --- timers -----------------------------------------------------------------------

    def _check_timers(self) -> None:
        now = self.clock()
        ending = self._ending
        if ending is not None:
            while ending.steps and now >= ending.steps[0][0]:
                _, action = ending.steps.popleft()
                action()
                if self.finished:
                    return
            return
        st = self.status
        rec = self.record
        # The limit applies to each run: a keep-alive job may wait for hours between runs.
        elapsed_ms = (now - self._run_started_mono) * 1000
        if rec.timeout_ms and st.status == "running" and elapsed_ms >= rec.timeout_ms:
            self._begin_kill("error", f"timeout after {rec.timeout_ms / 1000:g}s")
            return
        if rec.stall_timeout_ms and st.status == "running" and not st.stalled:
            quiet_ms = (now - self._last_event_mono) * 1000
            if quiet_ms >= rec.stall_timeout_ms:
                st.stalled = True
                self._event("stalled", quiet_ms=int(quiet_ms))
                self._save(force=True)
                if rec.stall_kill:
                    self._begin_kill(
                        "error", f"stalled: no agent output for {quiet_ms / 1000:.0f}s"
                    )
                    return
        if st.status == "waiting" and self._idle_since is not None:
            idle_ms = rec.idle_timeout_ms or DEFAULT_IDLE_TIMEOUT_MS
            if (now - self._idle_since) * 1000 >= idle_ms:
                self._event("idle_timeout", idle_ms=idle_ms)
                self._begin_end("done", None)

    # --- ending -------------------------------------------------------------------------

    def _plan(
        self, final: str, error: str | None, steps: list[tuple[float, Callable[[], None]]]
    ) -> None:
        now = self.clock()
        self._ending = _Ending(final, error, deque((now + delay, act) for delay, act in steps))

    def _give_up(self) -> None:
        ending = self._ending
        assert ending is not None
        self._finish(ending.final, ending.error)

    def _begin_end(self, final: str, error: str | None) -> None:
        """A run ended normally or with an agent error: close the agent politely."""
        self.status.current_event = "closing"
        self._plan(
            final,
            error,
            [
                (CLOSE_GRACE, self.runner.terminate),
                (CLOSE_GRACE + 2, self.runner.kill),
                (CLOSE_GRACE + 4, self._give_up),
            ],
        )
        self.runner.close()

    def _begin_stop(self, why: str) -> None:
        """Graceful stop: abort the run, then SIGTERM, then SIGKILL."""
        self._event("stopping", reason=why)
        self.status.current_event = "stopping"
        self._plan(
            "cancelled",
            None,
            [
                (STOP_GRACE, self.runner.terminate),
                (2 * STOP_GRACE, self.runner.kill),
                (2 * STOP_GRACE + 2, self._give_up),
            ],
        )
        self.runner.abort()
        self._save(force=True)

    def _begin_kill(self, final: str, error: str) -> None:
        """Timeout or stall kill: no politeness."""
        self._plan(final, error, [(2.0, self.runner.kill), (4.0, self._give_up)])
        self.runner.terminate()

    def _finish(self, final: str, error: str | None) -> None:
        if self.finished:
            return
        self.finished = True
        st = self.status
        if final == "done":
            try:
                self.writer.write_result(self.last_answer or "")
            except OSError as exc:  # e.g. a full disk: the answer is lost, say so
                final, error = "error", f"could not write result.txt: {exc.strerror or exc}"
        if final != "cancelled":
            self._run_post_scripts()
        self._close_bead(final, error)
        st.status = final
        st.error = error if final == "error" else None
        st.current_event = final
        st.current_tool = None
        st.stalled = False
        st.finished_at_ms = now_ms()
        st.elapsed_s = round((st.finished_at_ms - st.started_at_ms) / 1000, 1)
        duration_ms = st.finished_at_ms - st.started_at_ms
        if final == "done":
            self._event("done", duration_ms=duration_ms, session_file=st.session_file)
        elif final == "error":
            self._event("error", error=error, duration_ms=duration_ms)
        else:
            self._event("cancelled", duration_ms=duration_ms)
        self._save(force=True)
        self.writer.mark_ready()
        try:
            self.runner.kill()  # nothing of the agent outlives its job,
            kill_job(self.job_dir)  # not even what left the agent's process group
        except Exception:
            log.exception("killing the agent of finished job %s failed", self.record.id)

    def _abandon(self, error: str) -> None:
        """Last resort after a supervisor bug: kill the agent and record the error."""
        try:
            self.runner.kill()
        except Exception:
            log.exception("kill after supervisor failure also failed")
        if not self.finished:
            self._finish("error", error)

    def _close_bead(self, final: str, error: str | None) -> None:
        if not self.record.bead_id:
            return
        from specialists.beads import on_job_finished

        try:
            on_job_finished(self.record, self.status, final, self.last_answer, error)
        except SpecialistsError as exc:
            self._event("notice", message=f"bead update failed: {exc.one_line()}")

    # --- recording ----------------------------------------------------------------------

    def _event(self, kind: str, **fields: object) -> None:
        record = self.writer.append_event(kind, **fields)
        self.status.events = self.writer.seq
        if self.observer:
            self.observer.on_event(record)

    def _save(self, *, force: bool = False) -> None:
        st = self.status
        pid = self.runner.pid if not self.finished else st.pid
        if pid != st.pid and pid is not None:  # one-shot runners start a process per run
            st.pid, st.agent_start_time = pid, process_start_time(pid)
        if st.started_at_ms and not self.finished:
            st.elapsed_s = round((now_ms() - st.started_at_ms) / 1000, 1)
        if force or self._dirty:
            if not self.writer.write_status(st):
                log.warning("status.json not written (disk full?); keeping state in memory")
            self._saved_at = self.clock()
            self._dirty = False
