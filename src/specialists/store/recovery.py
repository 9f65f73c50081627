"""Crash recovery: an active job whose supervisor is dead is ended, or restarted.

Proof of death is twofold: the recorded supervisor pid is gone (or is another process,
by its start time) AND the job's lock can be taken (the supervisor holds it for its whole
life). Only then does another process write the job's files, and only under that lock.
Before that, everything the dead supervisor left running is killed (store/proctree.py).

A job that can be taken over (a remote agent still running on its node: it has a checkpoint,
supervise/checkpoint.py; or any job paused at a usage limit, docs/usage-limits.md) is not
ended: the store's news restarts it through the start path with a supervisor that reattaches
to it (or waits out the pause), handing it the lock. One that cannot gets the end it
could not write, with the reason appended to CRASHED, and its owners are told. A job someone
asked to stop (it had begun stopping, or the stop request still waits in its inbox) is neither
taken over nor called crashed: it ends `cancelled`, as asked.

A job whose supervisor wrote its final status and died before its sessions and subscribers
heard of it (its status still `telling`: supervise/news.py) is told now, as its supervisor
would have told it, with the same event ids.

Recovery is idempotent. Under the lock it looks at what events.jsonl already ends with: a
terminal event there (the supervisor wrote its last event but not its status: a full disk,
or a kill between the two) is the job's end, and only the status is completed from it.
Otherwise one recovered final event is appended. A reader that finds no space leaves nothing
half-written and shows the recovered state without recording it; the next one tries again.

A job directory without status.json is a launch in progress while its launcher holds the
lock or for LAUNCH_GRACE_S after its last change; after that it is a launch that failed
half-way, recorded as never started, so `status` shows it and gc removes it in time.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from specialists.base.errors import StoreError
from specialists.store.joblog import TERMINAL_EVENTS, last_event
from specialists.store.jobs import CHECKPOINT_FILE, JobLock, JobStore, now_ms
from specialists.store.liveness import is_alive
from specialists.store.records import LIMIT_EVENT, JobStatus

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

CRASHED = "supervisor crashed"
UNSTARTED = "the job was never started (its launcher stopped before writing status.json)"
LAUNCH_GRACE_S = 30.0
RECOVERING_WAIT_S = 2.0  # how long a reader waits for another that is recovering the job


def supervisor_alive(status: JobStatus) -> bool:
    return is_alive(status.supervisor_pid, status.supervisor_start_time)


def recover_if_dead(
    store: JobStore, job_id: str, status: JobStatus, *, final: str = "error", reason: str = CRASHED
) -> JobStatus:
    """Return the status to show; if the supervisor died, first record that durably."""
    if not (status.active or status.telling) or supervisor_alive(status):
        return status
    lock = JobLock(store.job_dir(job_id))
    try:
        if not _acquire_soon(lock):
            return status  # a supervisor (maybe just starting) holds the job
        current = store.read_status(job_id)
        if current is None or not (current.active or current.telling):
            return current or status
        if supervisor_alive(current):
            return current
        if not current.active:  # it wrote its end, then died before its sessions heard
            return record_end(store, current, current.status, current.error or CRASHED)
        if reason == CRASHED and _stop_was_asked(store, current):
            final, reason = "cancelled", "stopped"
        revived = _revive(store, current, lock.fd) if reason == CRASHED else None
        if isinstance(revived, int):
            current.supervisor_pid, current.supervisor_start_time = revived, None
            return current  # a new supervisor holds the job (and the lock) now
        if revived:
            reason = f"{CRASHED} ({revived})"
        kill_agent(current, store.job_dir(job_id))
        return record_end(store, current, final, reason)
    finally:
        lock.release()


def _acquire_soon(lock: JobLock) -> bool:
    """The lock of a job whose supervisor is dead, waiting a moment when it is held: the
    holder is most likely its keeper or another reader writing its end right now, and a
    reader that gave up at once would show the job `running` a little longer."""
    deadline = time.monotonic() + RECOVERING_WAIT_S
    while not lock.try_acquire():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def _stop_was_asked(store: JobStore, current: JobStatus) -> bool:
    """Someone asked the job to stop before its supervisor died: it had begun stopping, or
    the request still waits in its inbox (a supervisor that hung or was SIGSTOPped never
    took it). Recovery records what was asked: `cancelled`, not a crash."""
    from specialists.store.control import stop_pending  # seldom needed: load it then

    return current.current_event == "stopping" or stop_pending(store.job_dir(current.id))


def is_crash(error: str | None) -> bool:
    """Did recovery end the job (CRASHED, maybe with why it could not be taken over)?"""
    return error is not None and (error == CRASHED or error.startswith(CRASHED + " ("))


def _revive(store: JobStore, current: JobStatus, lock_fd: int) -> int | str | None:
    """Under the job's lock: a supervisor that takes the job over (the store's news `revive`:
    its pid), or why there is none (the job ends), or None (an ordinary crash)."""
    revive, job_dir = getattr(store.news, "revive", None), store.job_dir(current.id)
    hosted = (job_dir / CHECKPOINT_FILE).exists()  # a remote job: its checkpoint decides
    paused = not hosted and paused_at_limit(current)
    if revive is None or not (paused or hosted):
        return None  # nothing to take over (a local job): no need to look further
    last = last_event(store.events_path(current.id))
    if last is not None and last["event"] in TERMINAL_EVENTS:
        return None  # its supervisor wrote its end: only the status is to be completed
    if paused:  # an idle agent (pi) may be left: its successor starts one of its own
        kill_agent(current, job_dir)
    answer: int | str | None = revive(store.root, current.id, lock_fd)
    return answer


def paused_at_limit(status: JobStatus) -> bool:
    """Waiting out a usage limit: nothing runs that a crash could lose, so any job paused so
    can be taken over by a new supervisor (supervise/start.py `restart`)."""
    return (
        status.status == "waiting"
        and status.current_event == LIMIT_EVENT
        and status.paused_until_ms is not None
    )


def record_end(
    store: JobStore, current: JobStatus, final: str, reason: str, *, recovered: bool = True
) -> JobStatus:
    """Write the end of a job that its supervisor did not end (it died, or could not start),
    under the job's lock, telling it around its final status as its supervisor would have
    (store.news)."""
    from specialists.store.writer import JobWriter, mark_ended  # seldom needed: load it then

    writer = JobWriter(store, current.id, patience_s=0)
    try:
        last = last_event(store.events_path(current.id))
        if last is not None and last["event"] in TERMINAL_EVENTS:
            # The supervisor's own end (told before it was written): adopt it, append
            # nothing; what is told after the status is told now.
            error = last.get("error")
            kind = last["event"]
            mark_ended(current, kind, error if isinstance(error, str) else None, last["ts"])
            current.events = last["seq"]
            write: Callable[[], object] = lambda: writer.complete(current)  # noqa: E731
            told = True
        else:
            mark_ended(current, final, reason if final == "error" else current.error, now_ms())
            fields = {"recovered": True} if recovered else {}
            write = lambda: writer.write_final(current, final, error=current.error, **fields)  # noqa: E731
            told = False
        # Its end told as its supervisor tells it, around the final status (store/news.py).
        written: list[bool] = []
        failed: list[BaseException] = []

        def record() -> None:  # the end once, whoever calls first; what it raises is raised here
            if written:
                writer.write_status(current)  # told: the status again
                return
            written.append(True)
            try:
                write()
            except BaseException as exc:
                failed.append(exc)
                raise

        recovered_end = getattr(store.news, "recovered_end", None)
        try:
            if recovered_end is not None:
                recovered_end(store.root, current, record, told=told)
        finally:
            if not written:
                record()  # no teller, or it failed before its turn to write
        if failed:
            raise failed[0]
    finally:
        writer.close()
    return current


def settle_unstarted(store: JobStore, job_id: str) -> JobStatus:
    """The status of a job directory that has no status.json (see the module docstring)."""
    job_dir = store.job_dir(job_id)
    changed_ms = int(os.lstat(job_dir).st_mtime * 1000)
    starting = JobStatus(id=job_id, specialist="?", status="starting", started_at_ms=changed_ms)
    if time.time() * 1000 - changed_ms < LAUNCH_GRACE_S * 1000:
        return starting
    lock = JobLock(job_dir)
    try:
        if not lock.try_acquire():
            return starting  # its launcher is still at work
        written = store.read_status(job_id)
        if written is not None:
            return written  # it was written meanwhile
        status = JobStatus(id=job_id, specialist=_specialist_of(store, job_id))
        status.started_at_ms = changed_ms
        return record_end(store, status, "error", UNSTARTED)
    finally:
        lock.release()


def _specialist_of(store: JobStore, job_id: str) -> str:
    try:
        return store.read_record(job_id).specialist
    except StoreError:
        return "?"  # job.json is missing or damaged too


def kill_agent(status: JobStatus, job_dir: Path | None = None) -> None:
    """SIGKILL the job's recorded agent (if it is still that process) with its group and tree,
    and, given the job's directory, every other process that provably belongs to the job."""
    # Imported here: `status` reads many jobs and recovers few; it should not pay for this.
    from specialists.store.proctree import Proc, kill_job, kill_tree

    pid, start = status.pid, status.agent_start_time
    agent = Proc(pid, start) if pid and start is not None and start > 0 else None
    if job_dir is not None:
        kill_job(job_dir, agent)
    elif agent is not None:
        kill_tree(agent)
