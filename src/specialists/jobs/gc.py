"""Garbage collection of old finished jobs (SPECIALISTS_JOB_TTL_DAYS, default 7).

Runs at every `run` start, so it must cost little with many jobs: it works from the
finished-jobs index (view.overview), which reads only unfinished jobs' status files and
records dead supervisors on the way.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass

from specialists.jobs import index
from specialists.jobs.recovery import CRASHED
from specialists.jobs.store import JobStore
from specialists.jobs.view import overview

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
    kept_active: int
    crashed: list[str]  # finished jobs (still present) that ended "supervisor crashed"


def collect(store: JobStore, *, days: float | None = None, now: float | None = None) -> GcReport:
    """Remove finished jobs that ended more than `days` ago; never touch active ones."""
    limit = (now or time.time()) - (ttl_days() if days is None else days) * 86400
    active, finished, _ = overview(store)
    removed: list[str] = []
    for entry in finished:
        ended = entry.started_at_ms / 1000 + entry.elapsed_s
        if ended < limit:
            shutil.rmtree(store.job_dir(entry.id), ignore_errors=True)
            (store.ready_dir / entry.id).unlink(missing_ok=True)
            removed.append(entry.id)
    gone = set(removed)
    if removed:
        index.save(store, {e.id: e for e in finished if e.id not in gone})
    crashed = [e.id for e in finished if e.error == CRASHED and e.id not in gone]
    return GcReport(removed=removed, kept_active=len(active), crashed=crashed)
