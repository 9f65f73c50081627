"""Where a caller stands (its real stack) and where each child stands (its phase).

The real stack is never taken from the caller's word: a job that is a thread has its stack
in its own launch record (job.json `thread`), written by its spawner; anyone else is the root
(R-H1). A child's phase is read from its job's status (a dead supervisor is recorded on the
way, so a killed child is seen as ended) and the thread's close markers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from specialists.base.errors import NotFound, StoreError, UserError
from specialists.events.owners import owner_job_id
from specialists.features.sandbox.backend import ChildState
from specialists.features.threads.records import (
    ROOT,
    Closed,
    ThreadRecord,
    ThreadStore,
    check_thread_id,
    is_thread_id,
)
from specialists.store.jobs import JobStore
from specialists.store.news import NEWS
from specialists.store.records import JobRecord, JobStatus
from specialists.store.view import current_status

Phase = Literal["running", "closing", "ended", "closed"]


def job_store(state_root: Path) -> JobStore:
    """The job store as threads use it: a crash recovered on the way tells the job's owner
    (notices), as any other reader's recovery does."""

    return JobStore(state_root, news=NEWS)


@dataclass(frozen=True)
class Position:
    """The caller: which thread it is (root or t-...) and its stack, from the records."""

    thread_id: str
    stack: tuple[str, ...]
    job: JobRecord | None  # the caller's own job, when it is one of ours
    sandbox: str | None  # the sandbox the caller works in, if any


def position_of(state_root: Path, owner: str, job_id: str | None) -> Position:
    job_id = job_id or owner_job_id(owner)
    if job_id is None:
        return Position(ROOT, (ROOT,), None, None)
    try:
        job = job_store(state_root).read_record(job_id)
    except (NotFound, StoreError, OSError) as exc:
        raise UserError(f"cannot read your own job {job_id}'s record: {exc}") from None
    stack = _stack_of(job)
    return Position(stack[-1], stack, job, job.sandbox)


def _stack_of(job: JobRecord) -> tuple[str, ...]:
    raw = job.thread.get("stack") if job.thread else None
    if not raw:
        return (ROOT,)
    stack = tuple(raw)
    if stack[0] != ROOT or not all(is_thread_id(s) for s in stack[1:]):
        raise StoreError(f"job {job.id}'s thread stack is damaged: {stack!r}")
    return stack


def stack_text(stack: tuple[str, ...] | list[str]) -> str:
    return "[" + ", ".join(stack) + "]"


@dataclass(frozen=True)
class Child:
    record: ThreadRecord
    status: JobStatus | None  # None: the job's status cannot be read
    phase: Phase
    closed: Closed | None
    problem: str | None = None

    @property
    def failed(self) -> bool:
        """Known failed (R-H6b): closed as failed, or ended in error and not yet closed."""
        if self.closed is not None:
            return self.closed.failed
        return self.status is not None and self.status.status in ("error", "cancelled")


def child_view(threads: ThreadStore, jobs: JobStore, record: ThreadRecord) -> Child:
    problem = None
    try:
        status: JobStatus | None = current_status(jobs, record.job_id)
    except (NotFound, StoreError, OSError) as exc:
        status, problem = None, str(exc)
    closed = threads.closed(record.id)
    if closed is not None:
        phase: Phase = "closed"
    elif threads.closing(record.id) is not None:
        phase = "closing"
    elif status is None or status.active:
        phase = "running"
    else:
        phase = "ended"
    return Child(record, status, phase, closed, problem)


def direct_child(
    threads: ThreadStore, jobs: JobStore, caller_owner: str, thread_id: object
) -> Child:
    """The caller's own direct child `thread_id`, or one clear error (unknown, not yours)."""
    record = threads.get(check_thread_id(thread_id))
    if record is None:
        raise UserError(f"unknown thread {thread_id!r}", hint="spawn_thread returns the ids")
    if record.parent != caller_owner:
        raise UserError(
            f"thread {thread_id} is not your direct child",
            hint="only the thread that spawned a child may message or squash it",
        )
    return child_view(threads, jobs, record)


def child_state(child: Child) -> ChildState:
    """R-S5: running, finalizing (closing, or closed while its job still winds down), finished."""
    if child.phase == "running":
        return "running"
    if child.phase == "closing" or (child.status is not None and child.status.active):
        return "finalizing"
    return "finished"


def auto_commit_of(jobs: JobStore, job_id: str) -> bool:
    """Its definition's auto_commit; unknown means never commit on its behalf (R-S5: with
    auto-commit off, a dirty sandbox is refused rather than committed or deleted)."""
    try:
        return jobs.read_record(job_id).auto_commit
    except (NotFound, StoreError, OSError):
        return False
