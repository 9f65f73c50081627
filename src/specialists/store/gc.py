"""Garbage collection of old finished jobs (SPECIALISTS_JOB_TTL_DAYS, default 7).

`specialists clean` (the Node original's command; `gc` is its older name here) chooses more
broadly: every finished job (`every`), or all but the `keep` newest, or only says what it
would remove (`dry_run`). Active jobs are never candidates, whatever is asked.

Runs at every `run` start, so it must cost little with many jobs: it works from the
finished-jobs index (view.overview), which reads only unfinished jobs' status files and
records dead supervisors on the way. The index is only a cache, so before a job is deleted
its own status.json is read again and must say it ended before the limit.

A bad SPECIALISTS_JOB_TTL_DAYS (not a number, not finite, zero or less) is refused before
anything is deleted: one line, exit 2, and the `run` that would have collected starts
nothing (reader/env.py).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from specialists.base.errors import StoreError
from specialists.base.reader.env import env_number
from specialists.base.tuples import NamedTuple
from specialists.store import index, keys
from specialists.store.files import remove_tree
from specialists.store.jobs import JobStore
from specialists.store.recovery import is_crash
from specialists.store.view import overview

DEFAULT_TTL_DAYS = 7.0
TTL_ENV = "SPECIALISTS_JOB_TTL_DAYS"
MAX_TTL_DAYS = 36_500.0


def ttl_days() -> float:
    """The TTL from the environment; raises ConfigError (one line, exit 2) for a bad value."""
    return env_days(TTL_ENV, DEFAULT_TTL_DAYS)


def env_days(name: str, default: float) -> float:
    """A number of days from the environment variable `name` (`default` when unset); a bad
    value is refused (reader/env.py)."""
    return env_number(name, default, low=0, high=MAX_TTL_DAYS, unit="days")


class GcReport(NamedTuple):
    removed: list[str]  # with dry_run: the jobs that would be removed
    kept_active: int
    crashed: list[str]  # finished jobs (still present) that ended "supervisor crashed"
    problems: list[str]  # damaged jobs, left in place
    freed_bytes: int = 0  # what the removed (or, dry, the chosen) directories held


def collect(
    store: JobStore,
    *,
    days: float | None = None,
    now: float | None = None,
    every: bool = False,
    keep: int | None = None,
    dry_run: bool = False,
) -> GcReport:
    """Remove finished jobs that ended more than `days` ago (default: the TTL), or every
    finished one (`every`; also when only `keep` is given), less the `keep` newest; never
    touch active ones. `dry_run` removes nothing and reports what it would remove."""
    now = now or time.time()
    if every or (keep is not None and days is None):
        limit = now + 1  # ended before now: every finished job
    else:
        limit = now - (ttl_days() if days is None else days) * 86400
    active, finished, problems = overview(store)
    newest_first = sorted(finished, key=_ended, reverse=True)
    kept = {e.id for e in newest_first[: keep or 0]}
    removed: list[str] = []
    freed = 0
    wrong: set[str] = set()  # cached as finished, but their own status says otherwise
    for entry in newest_first:
        if _ended(entry) >= limit or entry.id in kept:
            continue
        verdict = _verdict(store, entry.id, limit)
        if verdict == "delete":
            freed += tree_bytes(store.job_dir(entry.id))
            if not dry_run:
                _release_key(store, entry.id)
                remove_tree(store.job_dir(entry.id))
            removed.append(entry.id)
        elif verdict == "not finished":
            wrong.add(entry.id)
    gone = set() if dry_run else set(removed)
    if (gone or wrong) and not dry_run:
        index.save(store, {e.id: e for e in finished if e.id not in gone | wrong})
    crashed = [e.id for e in finished if is_crash(e.error) and e.id not in gone]
    return GcReport(
        removed=removed,
        kept_active=len(active),
        crashed=crashed,
        problems=problems,
        freed_bytes=freed,
    )


def _ended(entry: index.Finished) -> float:
    return entry.started_at_ms / 1000 + entry.elapsed_s


def tree_bytes(path: Path, limit: int = 100_000) -> int:
    """The bytes of the files under `path`, links not followed, at most `limit` entries
    looked at (a job directory with millions of files is not walked to the end)."""
    total = seen = 0
    for dirpath, dirnames, filenames in os.walk(path):  # followlinks=False
        for name in (*dirnames, *filenames):
            seen += 1
            if seen > limit:
                return total
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                continue  # removed while we looked: nothing to count
    return total


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
