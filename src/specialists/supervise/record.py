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
from typing import TYPE_CHECKING, Protocol

from specialists.errors import SpecialistsError
from specialists.jobs.files import is_out_of_space
from specialists.jobs.proctree import kill_job
from specialists.jobs.records import JobRecord, JobStatus
from specialists.jobs.store import JobStore, now_ms
from specialists.jobs.writer import JobWriter, failure_reason
from specialists.procs.exit import post_job_exit
from specialists.runners.base import AgentExited, AgentRunner, Kill
from specialists.supervise.script_phases import run_post_scripts
from specialists.supervise.steps import StepGuard, StepInterrupted, signal_name
from specialists.supervise.words import Words
from specialists.vocab import PROC_RUNNER

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
            self._cancel_asks(f"the asking job ended {final}")
            if self.record.runner == PROC_RUNNER:  # a background command: its one job_exit
                self.guard.run("job_exit", lambda: self._post_job_exit(final, error))
            if final == "done":
                fields: dict[str, object] = {
                    "duration_ms": duration_ms,
                    "session_file": st.session_file,
                }
            elif final == "error":
                fields = {"error": error, "duration_ms": duration_ms}
            else:
                fields = {"duration_ms": duration_ms}
            if self.record.thread:  # commit; tell the parent (R-S9)
                from specialists.threads.closing import settle_quietly

                # Before the final status too: a parent that sees its child ended must find
                # the child_closed already in its inbox, or it could end without it.
                settle_quietly(self.store.root, self.record.id, ended=(final, error))
            elif self.record.sandbox:  # `run --sandbox`: commit; the job itself says how
                final, error = self._commit_sandbox(final, error)
                st.status, st.error, st.current_event = final, error, final
                if final == "error":
                    fields = {"error": error, "duration_ms": duration_ms}
            # Before the final status: an owner that sees the job ended finds its event too.
            self.guard.run("telling the owners", lambda: self._tell_owners(final, error))
            # Event, status, news for the owner: written once, waiting for space if they must.
            record = self.writer.write_final(st, final, **fields)
            self._show(lambda observer: observer.on_event(record))

    def _commit_sandbox(self, final: str, error: str | None) -> tuple[str, str | None]:
        """Commit a `--sandbox` job's work (its agent is dead). A job that would end `done`
        with its work left uncommitted ends `error` instead, saying why and where the
        work is: the person looks at the status, not at supervisor.log."""
        from specialists.threads.closing import finish_job_sandbox

        try:
            problem, summary = finish_job_sandbox(self.store.root, self.record.id)
        except (SpecialistsError, OSError) as exc:  # its job record became unreadable
            problem, summary = f"sandbox finalization failed: {exc}", None
        if summary:
            self._notice(summary if summary.startswith("committed as") else f"sandbox: {summary}")
        if problem is None:
            return final, error
        self._notice(problem)
        if final == "done":
            return "error", f"the agent finished, but its work was not committed: {problem}"
        return final, error

    def _cancel_asks(self, why: str) -> None:
        """Nobody waits for a reply to this job's open asks any more (asks/ops.py)."""
        from specialists.asks.ops import cancel_open

        def cancel() -> None:
            for ask_id in cancel_open(self.store.root, self.record.id, why):
                self._event("ask_cancelled", ask=ask_id, reason=why)

        self.guard.run("ending the job's asks", cancel)

    def _gate(self) -> tuple[str, str | None]:
        """`run --gate`: the agent is stopped first, so nothing writes while the gate looks."""
        from specialists.gates.job import gate_verdict

        self.guard.run("stopping the agent for its gate", lambda: self.runner.send(Kill()))
        self._event("gate_start", command=self.record.gate.get("command"))
        failure, result = gate_verdict(self.store.root, self.record, self.job_dir)
        if result is not None:
            evidence = None if result.evidence is None else str(result.evidence)
            self._event(
                "gate", outcome=result.outcome, memo=result.memo, evidence=evidence,
                reason=result.reason(),
            )  # fmt: skip
            for warning in result.warnings:
                self._notice(warning)
        return ("error", failure) if failure else ("done", None)

    def _post_job_exit(self, final: str, error: str | None) -> None:
        """After everything of the command is dead (the owner, woken, finds it gone), and
        before the final status (a crash between the two: recovery posts it again, same id)."""
        post_job_exit(self.store, self.record, self.status, final, error)

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
                self.guard.run("bead", lambda: self._close_bead(final, error))
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
