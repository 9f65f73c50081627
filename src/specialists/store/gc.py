"""Garbage collection of old finished jobs (SPECIALISTS_JOB_TTL_DAYS, default 7).

Runs at every `run` start, so it must cost little with many jobs: it works from the
finished-jobs index (view.overview), which reads only unfinished jobs' status files and
records dead supervisors on the way. The index is only a cache, so before a job is deleted
its own status.json is read again and must say it ended before the limit.

A bad SPECIALISTS_JOB_TTL_DAYS (not a number, not finite, zero or less) deletes nothing: the
report carries one warning line for the interface to show, and the run goes on.
"""

from __future__ import annotations

import math
import os
import shutil
import time
from dataclasses import dataclass, field

from specialists.base.errors import StoreError
from specialists.store import index, keys
from specialists.store.jobs import JobStore
from specialists.store.recovery import is_crash
from specialists.store.view import overview

DEFAULT_TTL_DAYS = 7.0
TTL_ENV = "SPECIALISTS_JOB_TTL_DAYS"
MAX_TTL_DAYS = 36_500.0


def ttl_days() -> float:
    """The TTL from the environment; raises StoreError (one line) for a bad value."""
    return env_days(TTL_ENV, DEFAULT_TTL_DAYS, "no job was deleted")


def env_days(name: str, default: float, nothing_done: str) -> float:
    """A number of days from the environment variable `name` (`default` when unset); a bad
    value raises StoreError saying `nothing_done`."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        days = float(raw)
    except ValueError:
        days = math.nan
    if not 0 < days <= MAX_TTL_DAYS:  # also refuses nan and infinities
        raise StoreError(
            f"{name}={raw[:40]!r} is not a number of days; {nothing_done}",
            hint=f"use a positive number of days, e.g. {default:g} (the default)",
        )
    return days


@dataclass(frozen=True)
class GcReport:
    removed: list[str]
    kept_active: int
    crashed: list[str]  # finished jobs (still present) that ended "supervisor crashed"
    warnings: list[str] = field(default_factory=list)  # a bad TTL: one line, for the interface
    problems: list[str] = field(default_factory=list)  # damaged jobs, left in place


def collect(store: JobStore, *, days: float | None = None, now: float | None = None) -> GcReport:
    """Remove finished jobs that ended more than `days` ago; never touch active ones."""
    warnings: list[str] = []
    limit: float | None = None
    try:
        limit = (now or time.time()) - (ttl_days() if days is None else days) * 86400
    except StoreError as exc:
        warnings.append(exc.one_line())
    active, finished, problems = overview(store)
    removed: list[str] = []
    wrong: set[str] = set()  # cached as finished, but their own status says otherwise
    if limit is not None:  # a bad TTL deletes nothing
        for entry in finished:
            ended = entry.started_at_ms / 1000 + entry.elapsed_s
            if ended >= limit:
                continue
            verdict = _verdict(store, entry.id, limit)
            if verdict == "delete":
                _release_key(store, entry.id)
                shutil.rmtree(store.job_dir(entry.id), ignore_errors=True)
                removed.append(entry.id)
            elif verdict == "not finished":
                wrong.add(entry.id)
    gone = set(removed)
    if removed or wrong:
        index.save(store, {e.id: e for e in finished if e.id not in gone | wrong})
    crashed = [e.id for e in finished if is_crash(e.error) and e.id not in gone]
    return GcReport(
        removed=removed,
        kept_active=len(active),
        crashed=crashed,
        warnings=warnings,
        problems=problems,
    )


def _release_key(store: JobStore, job_id: str) -> None:
    """The start key a job was started by (store/keys.py) goes with it."""
    try:
        key = store.read_record(job_id).start_key
    except (StoreError, OSError):
        return  # no readable job.json: it was never claimed (claims follow job.json)
    if key is not None:
        keys.release(store.root, key, job_id)


def _verdict(store: JobStore, job_id: str, limit: float) -> str:
    """Whether the job's own files agree that it ended before `limit` (the cache may be
    wrong): "delete", "keep", or "not finished" (a cache row to drop)."""
    try:
        status = store.read_status(job_id)
    except (StoreError, OSError):
        return "keep"  # damaged: kept for a person to look at
    if status is None:  # a launch that failed half-way: judged by the directory's age
        return "delete" if os.lstat(store.job_dir(job_id)).st_mtime < limit else "keep"
    if status.active:
        return "not finished"
    ended_ms = status.finished_at_ms or status.started_at_ms + status.elapsed_s * 1000
    return "delete" if ended_ms / 1000 < limit else "keep"
