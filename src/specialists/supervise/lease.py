"""The resume lease: at most one live job continues a given job's session at a time.

Two jobs resuming one session would both append to (or fork from) the same conversation, and
neither result could be trusted. A workflow resume holds the same lease on the run it
resumes: two resumes of one run would launch each unfinished key twice. So a continuation
claims `jobs/<source>/resume.lease` when it is created, before its agent starts; the claim
names the new job and the process that made it:

    {"holder": "<new job id>", "pid": 4242, "start_time": 123456, "since_ms": ...}

A lease is *held* while its holder job is active and the process its status names (its
supervisor, or the launcher while it starts) is alive, proven by pid and kernel start time as
crash recovery proves it (a reused pid never matches). Otherwise it is stale, and the next
claim takes it over and says so. Nothing releases a lease explicitly: the holder's end is the
release, so a holder killed with SIGKILL cannot leave a lease that blocks forever.

Claims are made under a brief flock on `jobs/<source>/resume.lock` (jobs/locks.py), so two
concurrent resumes cannot both see the lease free.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from specialists.base.errors import SpecialistsError, StoreError, UserError
from specialists.base.vocab import WORKFLOW_RUNNER
from specialists.store.atomic import write_atomic
from specialists.store.files import parse_object, read_bytes
from specialists.store.jobs import JobStore, now_ms
from specialists.store.liveness import is_alive, process_start_time
from specialists.store.locks import held
from specialists.store.records import JobRecord

LEASE_FILE = "resume.lease"
LOCK_FILE = "resume.lock"
MAX_LEASE = 4096


@dataclass(frozen=True)
class Lease:
    holder: str
    pid: int
    start_time: int | None
    since_ms: int


@dataclass(frozen=True)
class LeaseClaim:
    lease: Lease
    reclaimed: Lease | None  # a stale lease this claim took over, or None

    def warning(self) -> str | None:
        old = self.reclaimed
        if old is None:
            return None
        return (
            f"took over the resume lease of job {old.holder} (pid {old.pid}): "
            "that job is no longer running"
        )


def read_lease(store: JobStore, source_id: str) -> Lease | None:
    """The lease on `source_id`'s session, whoever holds it (None: never resumed, or damaged
    beyond reading, which counts as free: the file is ours to rewrite)."""
    path = store.job_dir(source_id) / LEASE_FILE
    try:
        data = parse_object(read_bytes(path, MAX_LEASE), path)
    except FileNotFoundError:
        return None
    except StoreError:
        return None  # a planted FIFO, a symlink, a torn file: never followed, replaced on claim
    holder, pid, start, since = (data.get(k) for k in ("holder", "pid", "start_time", "since_ms"))
    if type(holder) is not str or type(pid) is not int or type(since) is not int:
        return None
    return Lease(holder, pid, start if type(start) is int else None, since)


def holder_alive(store: JobStore, lease: Lease) -> bool:
    """The holder job is active and the process its status names is provably alive."""
    try:
        st = store.read_status(lease.holder)
    except (OSError, SpecialistsError):
        # Unreadable or gone: fall back to the process that claimed it.
        return is_alive(lease.pid, lease.start_time)
    if st is None:  # being created: the launcher that claimed the lease is the holder
        return is_alive(lease.pid, lease.start_time)
    if not st.active:
        return False
    return is_alive(st.supervisor_pid, st.supervisor_start_time)


def live_holder(store: JobStore, source_id: str) -> Lease | None:
    lease = read_lease(store, source_id)
    return lease if lease is not None and holder_alive(store, lease) else None


def claim(store: JobStore, source_id: str, holder_id: str, *, what: str = "session") -> LeaseClaim:
    """Take the lease for job `holder_id`; UserError naming the live holder otherwise."""
    job_dir = store.job_dir(source_id)
    with held(job_dir / LOCK_FILE):
        old = read_lease(store, source_id)
        if old is not None and old.holder != holder_id and holder_alive(store, old):
            raise UserError(
                f"job {source_id}'s {what} is being resumed by job {old.holder} "
                f"(pid {old.pid}); one resume at a time",
                hint=f"wait for it or stop it: specialists status --job {old.holder}",
            )
        pid = os.getpid()
        lease = Lease(holder_id, pid, process_start_time(pid), now_ms())
        taken = old if old is not None and old.holder != holder_id else None
        fields: dict[str, object] = {
            "holder": holder_id,
            "pid": pid,
            "start_time": lease.start_time,
            "since_ms": lease.since_ms,
        }
        if taken is not None:
            fields["took_over"] = {"holder": taken.holder, "pid": taken.pid}
        write_atomic(job_dir / LEASE_FILE, json.dumps(fields).encode())
    return LeaseClaim(lease, taken)


def resumes_workflow(record: JobRecord) -> str | None:
    """The workflow run `record` resumes (`workflow resume`), or None."""
    if record.runner != WORKFLOW_RUNNER:
        return None
    source = record.runner_options.get("resume_of")
    return source if isinstance(source, str) and source else None


def continues_session(store: JobStore, record: JobRecord) -> str | None:
    """The job whose session `record` continues (`specialists resume`, `run --continue`,
    MCP `continue_from`), or None: a thread's parent_id names its parent, not a session it
    continues, and a fork copies a session without continuing it."""
    if not record.parent_id or not record.resume_session or record.thread:
        return None
    try:
        st = store.read_status(record.parent_id)
    except (OSError, SpecialistsError):
        return None
    if st is None or st.session_file != record.resume_session:
        return None
    return record.parent_id
