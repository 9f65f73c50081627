"""A job's pending work: what can still wake it (Infinity P1, P2).

A job `<id>` has pending work while its owner key `job-<id>` has

- pending timers (`timers.jsonl`: set, neither fired nor cancelled),
- inbox events not yet acknowledged (`events.jsonl` past the cursor), or
- jobs it owns that are starting or running (`JobRecord.owner` holds `job-<id>`): proc jobs
  from bg_run, child jobs it started with `specialists run`. A job that waits for a
  follow-up has answered: it is not pending work for its owner.

A running owned job always ends with an event for its owner (its `job_exit`, or the
"job ended" notice of supervise/news.py), so waiting for one never waits for nothing. An
owned job whose supervisor died is recorded as crashed here (jobs/recovery.py) and its
owners told, since its supervisor never will.

The owner directory is untrusted: a symlink in its place is refused (StoreError), never
followed, whatever it points to.
"""

from __future__ import annotations

import time

from specialists.base.errors import SpecialistsError
from specialists.base.lazy import logger
from specialists.base.tuples import NamedTuple
from specialists.events.inbox import Inbox
from specialists.events.owners import check_owner_dir
from specialists.events.timers import TimerStore
from specialists.store import index
from specialists.store.jobs import JobStore
from specialists.store.recovery import recover_if_dead

log = logger("specialists.supervisor")

RUNNING_STATES = frozenset({"starting", "running"})
MAX_SHOWN_JOBS = 5


class Pending(NamedTuple):
    """A snapshot of what can still wake a job."""

    timers: int = 0
    next_due_ms: int | None = None  # the earliest pending timer (wall-clock ms)
    events: bool = False  # unacknowledged inbox events
    jobs: tuple[str, ...] = ()  # owned jobs still starting or running
    problems: tuple[str, ...] = ()  # said, never compared (__eq__)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pending) and self[:4] == other[:4]

    def __hash__(self) -> int:
        return hash(self[:4])

    @property
    def any(self) -> bool:
        return bool(self.timers or self.events or self.jobs)

    def why(self, now_ms: int) -> str:
        """A few words for status.json and people: `1 timer due 14:05:09 UTC, job 1a2b3c4d`.
        A due time, not a countdown: the words change only when the pending work does, so
        a long wait rewrites status.json and logs `waiting` once, not every second."""
        parts = []
        if self.events:
            parts.append("events in the inbox")
        if self.timers:
            due = self.next_due_ms
            when = f" due {_when(due, now_ms)}" if due is not None else ""
            parts.append(f"{self.timers} timer{'s' if self.timers > 1 else ''}" + when)
        if self.jobs:
            shown = ", ".join(self.jobs[:MAX_SHOWN_JOBS])
            more = f" +{len(self.jobs) - MAX_SHOWN_JOBS}" if len(self.jobs) > MAX_SHOWN_JOBS else ""
            parts.append(f"job{'s' if len(self.jobs) > 1 else ''} {shown}{more}")
        return ", ".join(parts) or "nothing"


def _when(due_ms: int, now_ms: int) -> str:
    shape = "%H:%M:%S UTC" if due_ms - now_ms < 86_400_000 else "%Y-%m-%d %H:%M UTC"
    return time.strftime(shape, time.gmtime(due_ms / 1000))


def pending_work(
    store: JobStore,
    owner: str,
    *,
    own_id: str | None = None,
) -> Pending:
    """What `owner` still waits for. Raises StoreError for a planted owner directory."""
    check_owner_dir(store.root, owner)
    fold = TimerStore(store.root, owner).fold()
    timers = fold.pending()
    jobs, problems = owned_running_jobs(store, owner, skip=own_id)
    return Pending(
        timers=len(timers),
        next_due_ms=timers[0].due_ms if timers else None,
        events=Inbox(store.root, owner).has_pending(),
        jobs=tuple(jobs),
        problems=tuple(fold.problems) + tuple(problems),
    )


def owned_running_jobs(
    store: JobStore,
    owner: str,
    *,
    skip: str | None = None,
) -> tuple[list[str], list[str]]:
    """(ids of jobs owned by `owner` that are starting or running, problems).

    Finished jobs are skipped through the finished-jobs index; only unfinished jobs' status
    files are read, and only running ones' records. An owned job found with a dead
    supervisor is recorded as crashed here (its owners told through the store's news).
    """
    finished = index.load(store)
    out: list[str] = []
    problems: list[str] = []
    for job_id in store.list_ids():
        if job_id == skip or job_id in finished:
            continue
        try:
            status = store.read_status(job_id)
            if status is None or status.status not in RUNNING_STATES:
                continue
            if owner not in store.read_record(job_id).owner:
                continue
            status = recover_if_dead(store, job_id, status)
        except (SpecialistsError, OSError, ValueError, TypeError) as exc:
            if _owned_by(store, job_id, owner):  # another's damage is `status`'s to report
                problems.append(f"job {job_id}: {exc}")
            continue
        if status.status in RUNNING_STATES:
            out.append(job_id)
    return out, problems


def _owned_by(store: JobStore, job_id: str, owner: str) -> bool:
    """Whether `owner` owns the job; True when its record cannot tell (unreadable)."""
    try:
        return owner in store.read_record(job_id).owner
    except (SpecialistsError, OSError, ValueError, TypeError):
        return True
