"""A child's reports and its close, as events in its parent's inbox (R-H5, R-H6, R-S3, R-S4, R-S9).

- `report_to_parent`: validated and size-checked before anything is written, appended to the
  thread's report journal (which numbers it), then one `child_report` event with the id
  `<thread>:child_report:<seq>`: a retried append is dropped by the inbox's dedup.
- `close_thread`: claims the close (closing.json, exclusive) with its report. Nothing is sent
  yet: the child's job is still running.
- `close_ended(job)`: the job's end rendered for its parent (threads/plugin.py, HOOKS.ended:
  its supervisor's end and crash recovery alike, and `settle`, where a parent finds a child
  whose end nobody told, through the same teller). For a thread job whose close has not
  finished: claims the close if the child never did (the runtime closes it with the job's
  final text, R-S9), commits the sandbox with hooks disabled (`thread <id>`), takes its diff
  stat, writes closed.json and renders one `child_closed` event (id
  `<thread>:child_closed:1`). So `child_closed` always means the child's job has ended and
  its sandbox is final: the parent may squash at once.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specialists.base.errors import SpecialistsError, UserError
from specialists.events.inbox import Inbox
from specialists.events.model import EventSource
from specialists.events.told import Told
from specialists.features.threads.records import Closed, Closing, ThreadRecord, ThreadStore
from specialists.features.threads.reports import decode_report, prepare_report, render_report
from specialists.features.threads.state import Child, Position, child_view, job_store
from specialists.store.jobs import JobStore
from specialists.store.records import JobRecord

log = logging.getLogger("specialists.features.threads")


def _source(record: ThreadRecord) -> EventSource:
    return EventSource(
        "spawn_thread",
        record.call_id,
        {"thread_id": record.id, "instructions": record.instructions[:120]},
    )


def own_thread(state_root: Path, position: Position) -> ThreadRecord:
    """The caller's own thread record; a caller that is not a thread is refused."""
    if position.job is None or position.thread_id == "root":
        raise UserError(
            "you are not a thread: report_to_parent and close_thread are for child threads",
            hint="the root session receives reports; it does not send them",
        )
    record = ThreadStore(state_root).get(position.thread_id)
    if record is None:
        raise UserError(f"thread {position.thread_id} has no record (its launch failed?)")
    return record


def report(state_root: Path, position: Position, args: Mapping[str, Any], now_ms: int) -> str:
    """One report to the parent; returns the event id."""
    prepared = prepare_report(args, required=True)  # before anything is written
    assert prepared is not None
    record = own_thread(state_root, position)
    threads = ThreadStore(state_root)
    if threads.closed(record.id) is not None or threads.closing(record.id) is not None:
        raise UserError(f"thread {record.id} has closed; it can no longer report")
    seq = threads.append_report(record.id, prepared.text, now_ms)
    body = f"thread {record.id} reports:\n{render_report(prepared.report)}"
    details = {"thread_id": record.id, "job_id": record.job_id, "seq": seq}
    Inbox(state_root, record.parent).append(
        "child_report", _source(record), body, source_id=record.id, seq=seq, details=details
    )
    return f"{record.id}:child_report:{seq}"


def close(state_root: Path, position: Position, args: Mapping[str, Any], now_ms: int) -> bool:
    """Claim the close with an optional report; False when it was already claimed."""
    prepared = prepare_report(args, required=False)  # a bad report does not close
    record = own_thread(state_root, position)
    text = prepared.text if prepared else None
    first = ThreadStore(state_root).begin_close(record.id, Closing("child", text, now_ms))
    if first and position.job is not None and position.job.keep_alive:
        # A keep-alive job would wait for a follow-up forever: end it (a waiting job ends
        # with its last answer; the report is recorded already).
        from specialists.store.control import post_request

        post_request(job_store(state_root).job_dir(record.job_id), "stop", "close_thread")
    return first


def settle(state_root: Path, job_id: str) -> str | None:
    """Tell the end of a thread job that ended unclosed (a parent's look at its children)
    through the one teller (supervise/news.py), whose rendering for its parent is its close
    (plugin.py); the child_closed id, or None when there was nothing to do."""
    from specialists.supervise.news import tell_recovered

    jobs = job_store(state_root)
    thread, status = jobs.read_record(job_id).thread, jobs.read_status(job_id)
    tid = str(thread.get("id")) if thread else ""
    threads = ThreadStore(state_root)
    if not tid or status is None or status.active or threads.closed(tid) is not None:
        return None
    for problem in tell_recovered(jobs, status, close_timers=False):
        log.warning("job %s: %s", job_id, problem)
    return f"{tid}:child_closed:1" if threads.closed(tid) is not None else None


def settled_view(threads: ThreadStore, jobs: JobStore, record: ThreadRecord) -> Child:
    """The child as it stands, after closing it if its job ended without a close.

    A child whose supervisor was killed (SIGKILL, a crash, a reboot) writes no end. Crash
    recovery records it when anyone looks at the job (its owner, the parent, gets the store's
    completion notice then), and this closes it the moment the threads room sees the job ended
    without a close: the parent's thread tools and `specialists threads`, so a dead child wakes
    its parent with one `child_closed` carrying the error (R-S9). Cheap when nothing is due:
    one status read per open child."""
    child = child_view(threads, jobs, record)  # records a dead supervisor on the way
    ended = child.status is not None and not child.status.active
    if child.phase == "ended" or (child.phase == "closing" and ended):
        settle(threads.state_root, record.job_id)
        child = child_view(threads, jobs, record)
    return child


def close_ended(
    state_root: Path, job_id: str, now_ms: int, ended: tuple[str, str | None]
) -> Told | None:
    """Finish the close of a thread job that ended (see the module docstring): its
    child_closed for the parent, or None when there was nothing to do. Never raises for a
    failure of its own: those are logged and the close records them as a failure.
    `ended`: the job's final state and error, as its end is told (its agent is dead). A job
    closed already (its end told twice: a supervisor killed after telling it, then recovery;
    or another process finished the close first) gets the same event again, which the
    parent's inbox drops."""
    jobs = job_store(state_root)
    job = jobs.read_record(job_id)
    if not job.thread:
        if job.sandbox:  # a job run with --sandbox after a crash: commit what it left
            finish = finish_sandbox(state_root, job, None)
            if finish.get("error"):
                log.warning("job %s: %s", job_id, finish["error"])
        return None
    threads = ThreadStore(state_root)
    record = threads.get(str(job.thread.get("id")))
    if record is None or record.job_id != job_id:
        return None
    if threads.closed(record.id) is None:
        final, error = ended
        if threads.closing(record.id) is None:
            answer = jobs.read_result(job_id) or jobs.latest_answer(job_id)
            threads.begin_close(record.id, Closing("runtime", answer, now_ms))
        closing = threads.closing(record.id) or Closing("runtime", None, now_ms)
        failed = closing.by != "child" and final != "done"
        finish = finish_sandbox(state_root, job, record)
        failed = failed or finish.get("error") is not None
        closed = Closed(
            by=closing.by,
            at_ms=now_ms,
            failed=failed,
            final=final,
            error=finish.get("error") or (error if final == "error" else None),
            branch=finish.get("branch"),
            diff_stat=finish.get("diff_stat"),
            commit=finish.get("commit"),
        )
        if threads.finish_close(record.id, closed):
            return _told(record, job_id, closing, closed, finish.get("summary"))
    found = threads.closed(record.id)
    if found is None:
        return None
    closing = threads.closing(record.id) or Closing(found.by, None, found.at_ms)
    return _told(record, job_id, closing, found, None)


def _told(
    record: ThreadRecord, job_id: str, closing: Closing, closed: Closed, summary: str | None
) -> Told:
    details = {
        "thread_id": record.id,
        "job_id": job_id,
        "final": closed.final,
        "failed": closed.failed,
        "by": closing.by,
        "branch": closed.branch,
        "diff_stat": closed.diff_stat,
        "commit": closed.commit,
    }
    body = closed_body(record, closing, closed, summary)
    return Told(record.parent, "child_closed", _source(record), body, record.id, 1, details)


def closed_body(
    record: ThreadRecord, closing: Closing, closed: Closed, stat_summary: str | None
) -> str:
    how = (
        "with close_thread"
        if closing.by == "child"
        else "by the runtime (it ended without close_thread)"
    )
    lines = [f"thread {record.id} closed {how}; its job ended {closed.final}"]
    if closed.failed:
        lines[0] += " (failed)"
    if closed.error:
        lines.append(f"error: {closed.error}")
    if closing.report:
        lines.append(render_report(decode_report(closing.report)))
    elif closing.by == "child":
        lines.append("(no report)")
    else:
        lines.append("(no final text)")
    if closed.branch:
        lines.append(f"sandbox: {stat_summary or closed.branch}")
        if closed.diff_stat:
            lines.append(closed.diff_stat.rstrip())
        lines.append(f"merge it with squash_sandbox(thread_id={record.id!r})")
    return "\n".join(lines)


def checkpoint_sandbox(state_root: Path, job: JobRecord, answer: int) -> str | None:
    """`auto_commit: checkpoint_on_waiting`: commit the job's sandbox as it waits after an
    answer. One line saying what was committed (None: nothing to commit, or no sandbox).
    Raises SpecialistsError or OSError when the commit fails."""
    record = ThreadStore(state_root).get(str(job.thread.get("id"))) if job.thread else None
    sandbox_id = (record.sandbox if record else None) or job.sandbox
    if not sandbox_id:
        return None
    from specialists.features.threads.sandboxing import backend_for

    backend = backend_for(state_root.parent)
    sandbox = backend.get(sandbox_id)
    if sandbox is None:
        return None
    outcome = backend.commit_all(sandbox, f"checkpoint: job {job.id} answer {answer}")
    return outcome.sha and f"checkpoint {outcome.sha[:12]} on {sandbox.branch}" + (
        f" as {outcome.fallback_identity}" if outcome.fallback_identity else ""
    )


def finish_sandbox(state_root: Path, job: JobRecord, record: ThreadRecord | None) -> dict[str, Any]:
    """R-S3 and R-S4: commit everything (hooks disabled) and take the diff stat. For a job
    run with `--sandbox` (not a thread, `record` None) its supervisor shows what failed and
    the summary line in the job's own status and events: nobody else is told."""
    sandbox_id = (record.sandbox if record else None) or job.sandbox
    name = record.id if record else f"job {job.id}"
    if not sandbox_id:
        return {}
    from specialists.features.threads.sandboxing import backend_for

    sandbox = None
    try:
        backend = backend_for(state_root.parent)
        sandbox = backend.get(sandbox_id)
        if sandbox is None:
            return {"error": f"sandbox {sandbox_id} has no record; nothing was committed"}
        outcome = (  # R-S3, unless its definition says auto_commit: false
            backend.commit_all(sandbox, f"thread {record.id}" if record else None)
            if job.auto_commit
            else None
        )
        stat = backend.diff_stat(sandbox)
        pending = not job.auto_commit and backend.has_pending_work(sandbox.path)
    except (SpecialistsError, OSError) as exc:
        why = exc.one_line() if isinstance(exc, SpecialistsError) else str(exc)
        log.warning("%s: sandbox finalization failed: %s", name, why)
        where = f" (the work is still in {sandbox.path})" if sandbox is not None else ""
        return {"error": f"sandbox finalization failed: {why}{where}"}
    summary = stat.summary()
    if pending:
        summary += " (uncommitted changes left in the worktree: auto_commit is off)"
    fallback = outcome.fallback_identity if outcome is not None else None
    if fallback:
        summary = f"committed as {fallback} (git has no user.name/user.email here); {summary}"
    return {
        "branch": stat.branch,
        "diff_stat": stat.text,
        "commit": outcome.sha if outcome else None,
        "summary": summary,
    }
