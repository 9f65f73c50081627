"""Read-side helpers shared by status, result, feed and the hooks: statuses, with dead
supervisors recorded on the way (recovery is applied only to active jobs)."""

from __future__ import annotations

from specialists.errors import StoreError
from specialists.jobs import index
from specialists.jobs.records import JobStatus
from specialists.jobs.recovery import recover_if_dead, settle_unstarted
from specialists.jobs.store import JobStore, iter_statuses


def current_status(store: JobStore, job_id: str) -> JobStatus:
    """The job's status, after recording a dead supervisor. Raises StoreError if unreadable."""
    status = store.read_status(job_id)
    if status is None:
        return settle_unstarted(store, job_id)
    return recover_if_dead(store, job_id, status)


def all_statuses(store: JobStore) -> tuple[list[JobStatus], list[str]]:
    """Every job's status (recovered where dead), plus one line per unreadable job."""
    out: list[JobStatus] = []
    problems: list[str] = []
    for job_id, status, problem in iter_statuses(store):
        if problem is not None:
            problems.append(f"job {job_id}: {problem}")
            continue
        try:
            if status is None:
                status = settle_unstarted(store, job_id)
            out.append(recover_if_dead(store, job_id, status) if status.active else status)
        except (StoreError, OSError) as exc:
            problems.append(f"job {job_id}: {exc}")
            if status is not None:
                out.append(status)
    return out, problems


def overview(store: JobStore) -> tuple[list[JobStatus], list[index.Finished], list[str]]:
    """(active statuses, finished summaries, problems), reading only unfinished jobs' files."""
    problems: list[str] = []
    known = index.load(store, problems)
    ids = store.list_ids()
    present = set(ids)
    changed = any(job_id not in present for job_id in known)  # gc removed some
    finished = {k: v for k, v in known.items() if k in present}
    active: list[JobStatus] = []
    for job_id in ids:
        if job_id in finished:
            continue
        try:
            status = store.read_status(job_id) or settle_unstarted(store, job_id)
            if status.active:
                status = recover_if_dead(store, job_id, status)
        except (StoreError, OSError) as exc:
            problems.append(f"job {job_id}: {exc}")
            continue
        if status.active:
            active.append(status)
        else:
            finished[job_id] = index.Finished.of(status)
            changed = True
    if changed:
        index.save(store, finished)
    return active, list(finished.values()), problems
