"""Crash recovery: an active job whose supervisor is dead becomes `error`.

Proof of death is twofold: the recorded supervisor pid is gone (or is another process,
by its start time) AND the job's lock can be taken (the supervisor holds it for its whole
life). Only then does another process write the job's files, and only under that lock.
Before that, everything the dead supervisor left running is killed (jobs/proctree.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from specialists.jobs.atomic import write_atomic
from specialists.jobs.liveness import is_alive
from specialists.jobs.records import JobStatus
from specialists.jobs.store import (
    EVENTS_FILE,
    STATUS_FILE,
    JobLock,
    JobStore,
    last_event_seq,
    now_ms,
)
from specialists.notices import post_for_job
from specialists.vocab import PROC_RUNNER

CRASHED = "supervisor crashed"


def supervisor_alive(status: JobStatus) -> bool:
    return is_alive(status.supervisor_pid, status.supervisor_start_time)


def recover_if_dead(
    store: JobStore, job_id: str, status: JobStatus, *, final: str = "error", reason: str = CRASHED
) -> JobStatus:
    """Return the status to show; if the supervisor died, first record that durably."""
    if not status.active or supervisor_alive(status):
        return status
    job_dir = store.job_dir(job_id)
    lock = JobLock(job_dir)
    try:
        if not lock.try_acquire():
            return status  # a supervisor (maybe just starting) holds the job
        current = store.read_status(job_id)
        if current is None or not current.active or supervisor_alive(current):
            return current or status
        kill_agent(current, job_dir)
        now = now_ms()
        current.status = final
        current.error = reason if final == "error" else current.error
        current.finished_at_ms = now
        if current.started_at_ms:
            current.elapsed_s = round((now - current.started_at_ms) / 1000, 1)
        current.current_event = final
        seq = last_event_seq(job_dir / EVENTS_FILE) + 1
        event = {"seq": seq, "ts": now, "event": final, "error": current.error, "recovered": True}
        with open(job_dir / EVENTS_FILE, "ab") as f:
            f.write((json.dumps(event, separators=(",", ":")) + "\n").encode())
        current.events = seq
        write_atomic(job_dir / STATUS_FILE, json.dumps(current.to_dict()).encode())
        post_for_job(store.root, job_id)
        if current.runner == PROC_RUNNER:
            # A background command's owner waits for its job_exit; the supervisor that
            # would have posted it is dead. The one call from the floor up, loaded only here.
            from specialists.procs.exit import post_after_recovery

            post_after_recovery(store, current)
        return current
    finally:
        lock.release()


def kill_agent(status: JobStatus, job_dir: Path | None = None) -> None:
    """SIGKILL the job's recorded agent (if it is still that process) with its group and tree,
    and, given the job's directory, every other process that provably belongs to the job."""
    # Imported here: `status` reads many jobs and recovers few; it should not pay for this.
    from specialists.jobs.proctree import Proc, kill_job, kill_tree

    pid, start = status.pid, status.agent_start_time
    agent = Proc(pid, start) if pid and start is not None and start > 0 else None
    if job_dir is not None:
        kill_job(job_dir, agent)
    elif agent is not None:
        kill_tree(agent)
