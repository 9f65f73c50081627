"""What the supervisor writes, and the one way a job ends.

`Recorder` holds the job's record as the supervisor keeps it: status.json (atomic, rewritten
when something changed), events.jsonl (appended), the answers of a keep-alive job, and
`_finish`, which every ending goes through once: the result, post-scripts and bead, then the
final status and event last.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from specialists.base.errors import SpecialistsError
from specialists.runners.base import AgentExited, AgentRunner, Kill
from specialists.store.files import is_out_of_space
from specialists.store.jobs import JobStore, now_ms
from specialists.store.proctree import kill_job
from specialists.store.records import JobRecord, JobStatus
from specialists.store.writer import JobWriter, failure_reason
from specialists.supervise.hooks import HOOKS, JobEnd
from specialists.supervise.script_phases import run_post_scripts
from specialists.supervise.steps import StepGuard, StepInterrupted, signal_name
from specialists.supervise.words import Words

if TYPE_CHECKING:
    from specialists.supervise.reattach import Replay

log = logging.getLogger("specialists.supervisor")
LAST_TEXT_CHARS = 200  # status.json's last_text: what a view shows beside the job


class Observer(Protocol):
    """Someone watching in-process (the foreground CLI)."""

    def on_text(self, text: str) -> None: ...

    def on_event(self, event: dict[str, object]) -> None: ...


def exit_message(ev: AgentExited) -> str:
    if ev.signal is not None:
        what = f"agent killed by {signal_name(ev.signal)}"
    else:
        what = f"agent exited with code {ev.exit_code}"
    tail = [ln for ln in ev.stderr_tail.strip().splitlines() if ln.strip()]
    detail = f": {tail[-1][:300]}" if tail else ""
    return f"{what} before finishing{detail}"


class Recorder:
    def __init__(
        self,
        store: JobStore,
        record: JobRecord,
        runner: AgentRunner,
        *,
        observer: Observer | None,
        clock: Callable[[], float],
        handle_signals: bool,
    ) -> None:
        self.store = store
        self.record = record
        self.runner = runner
        self.observer = observer
        self.clock = clock
        self.wall: Callable[[], float] = time.time  # timers' clock (waking.py sets it)
        self.job_dir = store.job_dir(record.id)
        self.writer = JobWriter(store, record.id)
        self.guard = StepGuard(self._notice, enabled=handle_signals)
        previous, problem = _previous_status(store, record.id)
        self._startup_notice = problem
        self.status = previous or JobStatus(id=record.id, specialist=record.specialist)
        self.finished = False
        self.last_answer: str | None = None  # the latest good answer: the result if it ends
        self._answers = 0
        self._saved_at = 0.0
        self._dirty = False
        self.replay: Replay | None = None  # a successor's events written before (reattach.py)
        self.words = Words()  # the agent's words, cut into bounded `text` events

    def _finish(self, final: str, error: str | None) -> None:
        if self.finished:
            return
        self._words_end()  # what it said last comes before how it ended
        self.finished = True
        with self.guard.interruptible(allowed=False):
            final, error = self._answer_stands(final, error)
            if final == "done" and self.record.gate:
                final, error = self._gate()
            st = self.status
            if final == "done":
                try:
                    notice = self.writer.write_result(self.last_answer or "")
                except (OSError, SpecialistsError) as exc:  # a disk still full after waiting
                    why = exc.strerror if isinstance(exc, OSError) else None
                    final, error = "error", f"could not write result.txt: {why or exc}"
                else:
                    if notice:  # a result.txt it did not write was there: moved aside
                        self._notice(notice)
            self._settle(final, error)
            st.status = final
            st.error = error if final == "error" else None
            st.current_event = final
            st.current_tool = None
            st.stalled = False
            st.finished_at_ms = now_ms()
            st.elapsed_s = round((st.finished_at_ms - st.started_at_ms) / 1000, 1)
            duration_ms = st.finished_at_ms - st.started_at_ms
            # Nothing of the agent outlives its job, not even what left its process group,
            # nor eats the room kept for its last words.
            self.guard.run("final kill", lambda: self.runner.send(Kill()))
            self.guard.run("killing the job's processes", lambda: kill_job(self.job_dir))
            if final == "done":
                fields: dict[str, object] = {
                    "duration_ms": duration_ms,
                    "session_file": st.session_file,
                }
            elif final == "error":
                fields = {"error": error, "duration_ms": duration_ms}
            else:
                fields = {"duration_ms": duration_ms}
            # What may still change how it ends, now that its agent is dead (a `--sandbox`
            # job's work not committed: `done` becomes `error`).
            ending = self._ending_for(final, error)
            for hook in HOOKS.finalize:
                verdict = _guarded(self.guard, "finalizing", hook, ending)
                if verdict is not None:
                    final, error = verdict
                    st.status, st.current_event = final, final
                    st.error = error if final == "error" else None
                    if final == "error":
                        fields = {"error": error, "duration_ms": duration_ms}
                    ending = self._ending_for(final, error)
            # What owners must find once they see the job ended (its asks settled, a proc's
            # job_exit, a thread's child_closed): before the final status.
            for hook in HOOKS.before_end:
                self.guard.run("ending", lambda hook=hook: hook(ending))  # type: ignore[misc]
            # Before the final status: an owner that sees the job ended finds its event too.
            self.guard.run("telling the owners", lambda: self._tell_owners(final, error))
            # Event, status, news for the owner: written once, waiting for space if they must.
            record = self.writer.write_final(st, final, **fields)
            self._show(lambda observer: observer.on_event(record))

    def _gate(self) -> tuple[str, str | None]:
        """`run --gate`: the agent is stopped first, so nothing writes while the gate looks."""
        self.guard.run("stopping the agent for its gate", lambda: self.runner.send(Kill()))
        ending = self._ending_for("done", None)
        for hook in HOOKS.gate:
            verdict = hook(ending)
            if verdict is not None:
                return verdict
        return "done", None

    def _ending_for(self, final: str, error: str | None) -> JobEnd:
        return JobEnd(
            store=self.store,
            record=self.record,
            status=self.status,
            final=final,
            error=error,
            answer=self.last_answer,
            answers=self._answers,
            now_ms=int(self.wall() * 1000),
            event=self._event,
            report=self.guard.report,
        )

    def _tell_owners(self, final: str, error: str | None) -> None:
        """The job's end as an event in each owner's inbox; its own timers die with it
        (supervise/news.py)."""
        from specialists.supervise import news

        root, record, now = self.store.root, self.record, int(self.wall() * 1000)
        problems = news.tell_owners(root, record, final, self.last_answer, error, now_ms=now)
        for problem in problems + news.close_own_timers(root, record.id, now_ms=now):
            self.guard.report(problem)

    def _answer_stands(self, final: str, error: str | None) -> tuple[str, str | None]:
        """A later run that failed or was stopped never replaces an earlier answer."""
        if final == "done" or self.last_answer is None:
            return final, error
        self._event("run_error", error=error or final, kept_answer_of_run=self._answers)
        return "done", None

    def _settle(self, final: str, error: str | None) -> None:
        """Post-scripts and the bead: reported when they fail, never in the way of the end."""
        with self.guard.interruptible():
            try:
                if final != "cancelled":
                    self.guard.run(
                        "post-scripts", lambda: run_post_scripts(self.record, self._event)
                    )
                ending = self._ending_for(final, error)
                for hook in HOOKS.settle:
                    self.guard.run("settling", lambda hook=hook: hook(ending))  # type: ignore[misc]
            except StepInterrupted:
                self._notice("post-scripts and bead update interrupted by a signal")

    def _abandon_after(self, exc: Exception) -> None:
        """The loop raised `exc`: a full disk is one logged line (no traceback in the
        foreground) and the job's named cause; anything else is a bug with its traceback."""
        if is_out_of_space(exc):
            log.warning("job %s: %s", self.record.id, exc)
        else:
            log.exception("supervisor failed")
        bug = f"bug: supervisor failed: {exc.__class__.__name__}: {exc}"
        self._abandon(failure_reason(exc, bug))

    def _abandon(self, error: str) -> None:
        """Last resort after a supervisor bug: kill the agent and record the error."""
        self.guard.run("kill after a supervisor failure", lambda: self.runner.send(Kill()))
        if not self.finished:
            self._finish("error", error)

    # --- recording ----------------------------------------------------------------------

    def _event(self, kind: str, **fields: object) -> None:
        if self.replay is not None and self.replay.seen(kind, fields):
            return  # written by the supervisor before us (reattach.py)
        record = self.writer.append_event(kind, **fields)
        self.status.events = self.writer.seq
        if self.observer:
            self._show(lambda observer: observer.on_event(record))

    def _show(self, show: Callable[[Observer], None]) -> None:
        """Pass something to the foreground display; one that fails (a closed terminal) is
        dropped with a notice: the job never depends on it."""
        observer = self.observer
        if observer is None:
            return
        try:
            show(observer)
        except Exception as exc:
            log.exception("the foreground display failed")
            self.observer = None
            self._notice(f"the foreground display failed and was dropped: {exc!r}")

    def _notice(self, message: str) -> None:
        self._event("notice", message=message)

    def _said(self, fields: dict[str, object] | None) -> None:
        """One window of the agent's words: a `text` event, and the status's latest words."""
        if fields is None:
            return
        self._event("text", **fields)
        self.status.last_text = str(fields["text"])[:LAST_TEXT_CHARS]
        self._dirty = True

    def _words_end(self) -> None:
        """A block of answer text ended (another event came, or the job ends)."""
        self._said(self.words.end())

    def _save(self, *, force: bool = False) -> None:
        st = self.status
        handle = self.runner.handle if not self.finished else None
        if handle is not None and handle.pid is not None and handle.pid != st.pid:
            st.pid, st.agent_start_time = handle.pid, handle.start_time  # a process per run
        if st.started_at_ms and not self.finished:
            st.elapsed_s = round((now_ms() - st.started_at_ms) / 1000, 1)
        if force or self._dirty:
            if not self.writer.write_status(st) and self.writer.failures_in_a_row == 1:
                log.warning(
                    "status.json not written (%s); kept in memory", self.writer.last_failure
                )
            self._saved_at = self.clock()
            self._dirty = False

    def _write_answer(self, text: str) -> None:
        self.writer.write_answer(self._answers, text)


def _previous_status(store: JobStore, job_id: str) -> tuple[JobStatus | None, str | None]:
    """The status the launcher wrote; a damaged one is replaced, and said so."""
    try:
        return store.read_status(job_id), None
    except (SpecialistsError, OSError, ValueError, TypeError) as exc:
        log.warning("status.json of job %s unreadable: %s", job_id, exc)
        return None, f"status.json was unreadable and has been rewritten: {exc}"


def _guarded(guard: StepGuard, what: str, hook: Callable[[JobEnd], Any], arg: JobEnd) -> Any:
    """`hook(arg)` under the guard (a failure is reported, never raised): its answer, or
    None when it failed."""
    out: list[Any] = []
    guard.run(what, lambda: out.append(hook(arg)))
    return out[0] if out else None
