"""Garbage collection of old finished jobs (SPECIALISTS_JOB_TTL_DAYS, default 7)."""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass

from specialists.jobs.recovery import recover_if_dead
from specialists.jobs.store import STATUS_FILE, JobStore, iter_statuses

DEFAULT_TTL_DAYS = 7.0


def ttl_days() -> float:
    raw = os.environ.get("SPECIALISTS_JOB_TTL_DAYS", "")
    try:
        return float(raw) if raw else DEFAULT_TTL_DAYS
    except ValueError:
        return DEFAULT_TTL_DAYS


@dataclass(frozen=True)
class GcReport:
    removed: list[str]
    recovered: list[str]
    kept_active: int


def collect(store: JobStore, *, days: float | None = None, now: float | None = None) -> GcReport:
    """Remove finished jobs older than `days`; record dead supervisors on the way."""
    limit = (now or time.time()) - (ttl_days() if days is None else days) * 86400
    removed: list[str] = []
    recovered: list[str] = []
    active = 0
    for job_id, status, problem in iter_statuses(store):
        job_dir = store.job_dir(job_id)
        if status is not None and status.active:
            after = recover_if_dead(store, job_id, status)
            if after.active:
                active += 1
                continue
            recovered.append(job_id)
            status = after
        try:
            stamp = (job_dir / STATUS_FILE).stat().st_mtime if problem is None else 0.0
            stamp = stamp or job_dir.stat().st_mtime
        except FileNotFoundError:
            stamp = job_dir.stat().st_mtime if job_dir.exists() else 0.0
        if status is None and problem is None and stamp > limit - 3600:
            continue  # a job being created right now has no status yet
        if stamp < limit:
            shutil.rmtree(job_dir, ignore_errors=True)
            (store.ready_dir / job_id).unlink(missing_ok=True)
            removed.append(job_id)
    return GcReport(removed=removed, recovered=recovered, kept_active=active)
