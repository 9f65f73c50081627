"""A detached supervisor's life once its keeper has forked (keeper.py): take the job's lock,
adopt the job's orphans, supervise until the job ends."""

from __future__ import annotations

import logging
from pathlib import Path

from specialists.base.errors import SpecialistsError
from specialists.runners.registry import job_runner
from specialists.store.jobs import JobLock, JobStore
from specialists.store.news import NEWS
from specialists.store.proctree import adopt_orphans
from specialists.store.records import JobStatus
from specialists.store.recovery import record_end
from specialists.supervise.supervisor import Supervisor


def supervise(job_dir: Path, fd_text: str, *, reattach: bool) -> int:
    """Supervise the job in `job_dir` until it ends; `fd_text` names the inherited lock's
    descriptor (empty: take the lock here)."""
    store = JobStore(job_dir.parent.parent, news=NEWS)
    lock = JobLock(job_dir, int(fd_text)) if fd_text else JobLock(job_dir)
    if not fd_text and not lock.try_acquire():
        logging.error("job %s is held by another supervisor", job_dir.name)
        return 1
    adopt_orphans(job_dir)  # descendants that leave the agent's group stay in our tree
    try:
        record = store.read_record(job_dir.name)
        runner = job_runner(record.runner, record.executor)
    except SpecialistsError as exc:
        logging.exception("cannot supervise %s: %s", job_dir.name, exc.one_line())
        _record_failure(store, job_dir.name, exc.one_line())
        return 1
    except (OSError, ValueError, TypeError, KeyError) as exc:  # a damaged job.json
        message = f"job.json unreadable: {type(exc).__name__}: {exc}"
        logging.exception("cannot supervise %s: %s", job_dir.name, message)
        _record_failure(store, job_dir.name, message)
        return 1
    status = Supervisor(store, record, runner, reattach=reattach).run()
    lock.release()
    return 0 if status.status == "done" else 1


def _record_failure(store: JobStore, job_id: str, message: str) -> None:
    """The supervisor could not even start: end the job with the reason, not a silent hang."""
    try:
        status = store.read_status(job_id)
    except (SpecialistsError, OSError, ValueError, TypeError) as exc:  # damaged too: replace it
        logging.warning("status.json of %s unreadable (%s); writing a new one", job_id, exc)
        status = JobStatus(id=job_id, specialist="unknown")
    if status is not None and status.active:
        record_end(store, status, "error", message, recovered=False)
