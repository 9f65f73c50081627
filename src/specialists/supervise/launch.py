"""Create a job on disk and start its supervisor: detached (background) or in-process.

The launcher takes the job's lock before writing any state and hands the locked file
descriptor to the detached supervisor, so from the first status.json on, some live process
always holds the lock: recovery can never mistake a starting job for a dead one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from specialists.jobs.atomic import write_atomic
from specialists.jobs.liveness import process_start_time
from specialists.jobs.proctree import MARK_ENV, job_mark
from specialists.jobs.records import JobRecord, JobStatus
from specialists.jobs.store import JOB_FILE, STATUS_FILE, SUPERVISOR_LOG, JobLock, JobStore, now_ms

LOCK_FD_ENV = "SPECIALISTS_LOCK_FD"


def create_job(store: JobStore, record: JobRecord) -> tuple[JobRecord, JobLock]:
    """Reserve an id, lock it, write job.json and the first status.json."""
    job_id, job_dir = store.create_job_dir()
    lock = JobLock(job_dir)
    if not lock.try_acquire():
        raise RuntimeError(f"bug: fresh job {job_id} is already locked")
    record = record.replace(id=job_id, created_at_ms=record.created_at_ms or now_ms())
    record = _carry_session(store, record, job_dir)
    write_atomic(job_dir / JOB_FILE, json.dumps(record.to_dict(), indent=1).encode())
    status = JobStatus(
        id=job_id,
        specialist=record.specialist,
        status="starting",
        current_event="starting",
        model=record.model,
        runner=record.runner,
        supervisor_pid=os.getpid(),
        supervisor_start_time=process_start_time(os.getpid()),
        started_at_ms=record.created_at_ms,
        cwd=record.cwd,
        parent_id=record.parent_id,
        bead_id=record.bead_id,
        keep_alive=record.keep_alive,
    )
    write_atomic(job_dir / STATUS_FILE, json.dumps(status.to_dict()).encode())
    return record, lock


def _carry_session(store: JobStore, record: JobRecord, job_dir: Path) -> JobRecord:
    """Copy a session file being continued into the new job, so each job owns its files."""
    ref = record.resume_session
    if not ref or not os.path.isabs(ref) or not os.path.isfile(ref):
        return record
    target = job_dir / Path(ref).name
    shutil.copyfile(ref, target)
    return record.replace(resume_session=str(target))


def spawn_supervisor(store: JobStore, record: JobRecord, lock: JobLock) -> int:
    """Start `python -m specialists.supervise <job_dir>` detached; returns its pid."""
    job_dir = store.job_dir(record.id)
    env = dict(os.environ)
    env[LOCK_FD_ENV] = str(lock.fd)
    env[MARK_ENV] = job_mark(job_dir)  # every process of the job inherits it (jobs/proctree.py)
    log = open(job_dir / SUPERVISOR_LOG, "ab")  # noqa: SIM115 - handed to the child
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "specialists.supervise", str(job_dir)],
            cwd=record.cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            pass_fds=(lock.fd,),
            start_new_session=True,  # no terminal signals; the caller may exit at once
        )
    finally:
        log.close()
        lock.release()  # the child holds the same lock through its inherited descriptor
    return proc.pid
