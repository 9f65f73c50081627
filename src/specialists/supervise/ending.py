"""The one way a job ends: `finish`, which every ending goes through once.

In order: the answer stands (a later run that failed never replaces an earlier answer), the
gate looks (`run --gate`), result.txt, post-scripts and the features' `settle` hooks, every
process of the job killed, the `before_end` hooks (what an owner must find once it sees the
job ended), the owners told (news.py `tell`: the one end and the features' renderings of
it) around the final event and status. A step that fails is
reported on the job and the end goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from specialists.base.errors import SpecialistsError
from specialists.runners.base import AgentExited, AgentRunner, Kill
from specialists.store.jobs import now_ms
from specialists.store.proctree import kill_job
from specialists.store.writer import mark_ended
from specialists.supervise import news
from specialists.supervise.hooks import HOOKS, JobEnd
from specialists.supervise.recorder import Recorder
from specialists.supervise.scripts import run_post_scripts
from specialists.supervise.steps import StepGuard, StepInterrupted, signal_name


def finish(
    j: Recorder,
    runner: AgentRunner,
    guard: StepGuard,
    final: str,
    error: str | None,
    *,
    answer: str | None,
    runs: int,
    wall: Callable[[], float],
) -> None:
    """End the job as `final` (with `error`); `answer`: its latest good answer, `runs` how
    many runs answered."""
    if j.finished:
        return
    j.words_end()  # what it said last comes before how it ended
    j.finished = True
    end = lambda final, error: job_end(j, guard, final, error, answer, wall, runs)  # noqa: E731
    with guard.interruptible(allowed=False):
        if final != "done" and answer is not None:  # a later run's failure or stop
            j.event("run_error", error=error or final, kept_answer_of_run=runs)
            final, error = "done", None
        if final == "done" and j.record.gate:
            # The agent is stopped first, so nothing writes while the gate looks.
            guard.run("stopping the agent for its gate", lambda: runner.send(Kill()))
            verdicts = (hook(end("done", None)) for hook in HOOKS.gate)
            final, error = next((v for v in verdicts if v is not None), ("done", None))
        st = j.status
        if final == "done":
            try:
                moved = j.writer.write_result(answer or "")
            except (OSError, SpecialistsError) as exc:  # a disk still full after waiting
                why = exc.strerror if isinstance(exc, OSError) else None
                final, error = "error", f"could not write result.txt: {why or exc}"
            else:
                if moved:  # a result.txt it did not write was there: moved aside
                    j.notice(moved)
        _settle(j, guard, end(final, error))
        ended_ms = now_ms()
        mark_ended(st, final, error, ended_ms)
        duration_ms = ended_ms - st.started_at_ms
        # Nothing of the agent outlives its job, not even what left its process group,
        # nor eats the room kept for its last words.
        guard.run("final kill", lambda: runner.send(Kill()))
        guard.run("killing the job's processes", lambda: kill_job(j.job_dir))
        # What may still change how it ends, now that its agent is dead (a `--sandbox`
        # job's work not committed: `done` becomes `error`).
        ending = end(final, error)
        for hook in HOOKS.finalize:
            verdict = _guarded(guard, "finalizing", hook, ending)
            if verdict is not None:
                final, error = verdict
                st.status, st.current_event = final, final
                st.error = error if final == "error" else None
                ending = end(final, error)
        fields: dict[str, object] = {"duration_ms": duration_ms}
        if final == "done":
            fields["session_file"] = st.session_file
        elif final == "error":
            fields = {"error": error, **fields}
        # What owners must find once they see the job ended (its asks settled; the end told,
        # as a proc's job_exit, a thread's child_closed, a job owner's notice): before the
        # final status.
        for hook in HOOKS.before_end:
            guard.run("ending", lambda hook=hook: hook(ending))  # type: ignore[misc]
        # The end told around its final event and status (written once, waiting for space if
        # they must): job owners before them, sessions and subscribers after (news.py).
        written: list[dict[str, Any]] = []

        def record() -> None:
            if written:
                j.writer.write_status(st)
            else:
                written.append(j.writer.write_final(st, final, **fields))

        guard.run("telling the owners", lambda: _report(guard, news.tell(ending, record)))
        if not written:
            record()  # the teller failed before its turn
        j.show(lambda observer: observer.on_event(written[0]))


def job_end(
    j: Recorder,
    guard: StepGuard,
    final: str,
    error: str | None,
    answer: str | None,
    wall: Callable[[], float],
    answers: int,
) -> JobEnd:
    """The job's end (or pause) as the features' hooks see it."""
    return JobEnd(
        store=j.store,
        record=j.record,
        status=j.status,
        final=final,
        error=error,
        answer=answer,
        answers=answers,
        now_ms=int(wall() * 1000),
        event=j.event,
        report=guard.report,
    )


def _guarded(guard: StepGuard, what: str, hook: Callable[[JobEnd], Any], arg: JobEnd) -> Any:
    """`hook(arg)` under the guard (a failure is reported, never raised): its answer, or
    None when it failed."""
    out: list[Any] = []
    guard.run(what, lambda: out.append(hook(arg)))
    return out[0] if out else None


def _settle(j: Recorder, guard: StepGuard, ending: JobEnd) -> None:
    """Post-scripts and the bead: reported when they fail, never in the way of the end."""
    with guard.interruptible():
        try:
            if ending.final != "cancelled":
                guard.run("post-scripts", lambda: run_post_scripts(j.record, j.event))
            for hook in HOOKS.settle:
                guard.run("settling", lambda hook=hook: hook(ending))  # type: ignore[misc]
        except StepInterrupted:
            j.notice("post-scripts and bead update interrupted by a signal")


def _report(guard: StepGuard, problems: list[str]) -> None:
    for problem in problems:
        guard.report(problem)


def exit_message(ev: AgentExited) -> str:
    if ev.signal is not None:
        what = f"agent killed by {signal_name(ev.signal)}"
    else:
        what = f"agent exited with code {ev.exit_code}"
    tail = [ln for ln in ev.stderr_tail.strip().splitlines() if ln.strip()]
    detail = f": {tail[-1][:300]}" if tail else ""
    return f"{what} before finishing{detail}"
