"""The mechanics under the one start (start.py, their only caller): a job's files, and its
detached supervisor.

The launcher takes the job's lock before writing any state and hands the locked file
descriptor to the detached supervisor, so from the first status.json on, some live process
always holds the lock: recovery can never mistake a starting job for a dead one.

A launch that fails half-way (a full disk, a session that cannot be copied) removes what it
made and raises one StoreError: it leaves no directory that `status` cannot show. A launcher
killed half-way leaves one that recovery records as never started after a grace period.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from specialists.base.errors import Bug, UserError
from specialists.store.atomic import write_atomic
from specialists.store.files import create_private, remove_tree, size_text, unwritten
from specialists.store.jobs import (
    EVENTS_FILE,
    JOB_FILE,
    MAX_RECORD,
    STATUS_FILE,
    STDERR_LOG,
    SUPERVISOR_LOG,
    JobLock,
    JobStore,
    now_ms,
)
from specialists.store.liveness import process_start_time
from specialists.store.proctree import MARK_ENV, job_mark
from specialists.store.records import JobRecord, JobStatus
from specialists.store.recovery import record_end
from specialists.store.writer import make_reserve
from specialists.supervise.argv import LOCK_FD_ENV, REATTACH_FLAG


def create_job(store: JobStore, record: JobRecord) -> tuple[JobRecord, JobLock]:
    """Reserve an id, lock it, write job.json, the reserve and the first status.json."""
    try:
        job_id, job_dir = store.create_job_dir()
    except OSError as exc:  # a disk out of inodes or blocks refuses the directory itself
        raise unwritten("could not create the job", exc) from None
    lock: JobLock | None = None
    try:
        lock = JobLock(job_dir)
        if not lock.try_acquire():
            raise Bug(f"fresh job {job_id} is already locked")
        record = record.replace(id=job_id, created_at_ms=record.created_at_ms or now_ms())
        record = _carry_session(record, job_dir)
        _write_files(lock.fd, record)
    except BaseException as exc:
        if lock is not None:
            lock.release()
        remove_tree(job_dir)
        if isinstance(exc, OSError):
            raise unwritten("could not create the job", exc) from None
        raise
    return record, lock


def _write_files(dir_fd: int, record: JobRecord) -> None:
    """Everything a job directory holds before its supervisor starts, all private."""
    data = json.dumps(record.to_dict(), indent=1).encode()
    if len(data) > MAX_RECORD:
        raise UserError(
            f"the job's launch record would be {size_text(len(data))} "
            f"(at most {size_text(MAX_RECORD)})",
            hint="give a shorter prompt; put long material in a file and name it",
        )
    write_atomic(JOB_FILE, data, dir_fd=dir_fd)
    make_reserve(dir_fd)  # room for the job's last words on a disk that fills up
    for name in (EVENTS_FILE, STDERR_LOG):
        os.close(create_private(name, os.O_WRONLY, dir_fd=dir_fd))  # 0600 from the start
    status = JobStatus(
        id=record.id,
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
        **record.labels(),
    )
    write_atomic(STATUS_FILE, json.dumps(status.to_dict()).encode(), dir_fd=dir_fd)


def _carry_session(record: JobRecord, job_dir: Path) -> JobRecord:
    """Copy a session file being continued into the new job, so each job owns its files."""
    ref = record.resume_session
    if not ref or not os.path.isabs(ref) or not os.path.isfile(ref):
        return record
    import shutil  # a continued job only

    target = job_dir / Path(ref).name
    shutil.copyfile(ref, target)
    os.chmod(target, 0o600)
    return record.replace(resume_session=str(target))


def spawn_supervisor(store: JobStore, record: JobRecord, lock: JobLock) -> int:
    """Start `python -m specialists _supervise <job_dir>` detached; returns its pid."""
    job_dir = store.job_dir(record.id)
    try:
        pid = _start_supervisor(
            job_dir, lock.fd, record.cwd, (), (record.runner, record.model or "")
        )
    except OSError as exc:
        error = unwritten("could not start the job's supervisor", exc)
        _record_launch_failure(store, record.id, error.message)
        lock.release()
        raise error from None
    lock.release()  # the child holds the same lock through its inherited descriptor
    return pid


def spawn_reattaching(job_dir: Path, lock_fd: int) -> int:
    """Start a supervisor that takes over the running job in `job_dir` (supervise/checkpoint.py),
    holding the lock on `lock_fd` as the caller does. Raises OSError."""
    return _start_supervisor(job_dir, lock_fd, str(job_dir.parent.parent.parent), (REATTACH_FLAG,))


def _start_supervisor(
    job_dir: Path, lock_fd: int, cwd: str, extra: tuple[str, ...], warm: tuple[str, str] = ("", "")
) -> int:
    """Forked by this process's fork server if it has one (forks.py), else by the project's
    shared one (shared_forks.py), else a fresh one."""
    env = dict(os.environ)
    env[LOCK_FD_ENV] = str(lock_fd)
    env[MARK_ENV] = job_mark(job_dir)  # every process of the job inherits it (jobs/proctree.py)
    log_fd = create_private(SUPERVISOR_LOG, os.O_WRONLY | os.O_APPEND, dir_fd=lock_fd)
    try:
        # Only a process that serves forks (`serve_here`) or is a fork server (its keeper
        # reviving a job) has loaded forks.py: a CLI `--background` start, which has no
        # server, asks the project's shared one (a foreground run starts no supervisor: it
        # imports neither).
        forks = sys.modules.get("specialists.supervise.forks")
        if forks is not None and forks.serving():
            pid = forks.launch(forks.Request(job_dir, cwd, env, lock_fd, log_fd, extra, warm))
        else:
            from specialists.supervise import shared_forks

            job = shared_forks.Request(job_dir, cwd, env, lock_fd, log_fd, extra, warm)
            pid = shared_forks.launch(job, job_dir.parent.parent)
        if pid is not None:
            return pid
        proc = subprocess.Popen(
            [sys.executable, "-m", "specialists", "_supervise", str(job_dir), *extra],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log_fd,
            stderr=log_fd,
            pass_fds=(lock_fd,),
            start_new_session=True,  # no terminal signals; the caller may exit at once
        )
    finally:
        os.close(log_fd)
    return proc.pid


def _record_launch_failure(store: JobStore, job_id: str, message: str) -> None:
    """End a job whose supervisor never started, under the lock we still hold."""
    status = store.read_status(job_id)
    if status is None:
        return
    record_end(store, status, "error", message, recovered=False)  # its owners told, once
