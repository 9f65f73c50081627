"""Waiting for jobs to end: the next one, all of them, or some, bounded by a timeout.

For `specialists wait` and the MCP `wait` tool. It reads status files (a stat-cheap read
every POLL_S, with crash recovery, so a job whose supervisor died counts as ended), never
signals or changes a job. A job that is waiting for a follow-up counts as ended when
`answered_counts` (its answer is in: for a keep-alive job that is the end of its work).

The non-blocking form is `subscribe`: it adds an owner key to a job's subscribers, and the
job's one completion notice (notices.py, the same event its owners get, the same id) goes to
that key's inbox too. A job already ended gets its notice posted at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from specialists.store.jobs import JobStore
from specialists.store.records import JobStatus
from specialists.store.view import current_status

POLL_S = 0.05
MAX_WAIT_S = 86_400.0

WaitMode = Literal["next", "all"]


@dataclass(frozen=True)
class WaitOutcome:
    ended: tuple[JobStatus, ...]  # in the order they were seen to end
    running: tuple[str, ...]  # ids still active at the deadline
    timed_out: bool
    waited_s: float

    def lines(self) -> list[str]:
        out = []
        for st in self.ended:
            error = f": {st.error}" if st.status == "error" and st.error else ""
            out.append(f"{st.id} {st.status} ({st.specialist}){error}")
        if self.timed_out:
            out.append(
                f"timed out after {self.waited_s:g} s; still running: {', '.join(self.running)}"
            )
        return out

    @property
    def all_done(self) -> bool:
        return not self.timed_out and all(st.status == "done" for st in self.ended)


def _ended(st: JobStatus) -> bool:
    return not st.active or (st.status == "waiting" and st.keep_alive)


def wait_for_jobs(
    store: JobStore,
    job_ids: Sequence[str],
    mode: WaitMode,
    timeout_s: float,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    cancelled: Callable[[], bool] = lambda: False,
) -> WaitOutcome:
    """Wait until one (`next`) or every (`all`) job of `job_ids` has ended, or `timeout_s`."""
    start = clock()
    deadline = start + max(0.0, min(timeout_s, MAX_WAIT_S))
    left = list(dict.fromkeys(job_ids))
    ended: list[JobStatus] = []
    while True:
        for job_id in list(left):
            st = current_status(store, job_id)
            if _ended(st):
                ended.append(st)
                left.remove(job_id)
        done = bool(ended) if mode == "next" else not left
        now = clock()
        if done or now >= deadline or cancelled() or not left:
            return WaitOutcome(tuple(ended), tuple(left), not done, round(now - start, 2))
        sleep(min(POLL_S, max(0.0, deadline - now)))


def owned_active(store: JobStore, owners: Sequence[str]) -> list[str]:
    """The active jobs whose owner names any of `owners` (what "my jobs" means)."""
    from specialists.base.errors import SpecialistsError

    out = []
    for job_id in store.list_ids():
        try:
            st = store.read_status(job_id)
            if st is None or not st.active:
                continue
            if set(store.read_record(job_id).owner) & set(owners):
                out.append(job_id)
        except (OSError, SpecialistsError):
            continue  # unreadable: `status` reports it; waiting cannot use it
    return sorted(out)


def subscribe(store: JobStore, job_id: str, owner: str) -> bool:
    """Have `owner` told of job `job_id`'s end (its completion notice, in its inbox).
    True when the job had already ended and the notice was posted at once."""
    import os

    from specialists.events import notices
    from specialists.events.owners import check_owner
    from specialists.store.files import create_private, ensure_dir, open_dir

    check_owner(owner)
    job_dir = store.job_dir(job_id)
    where = job_dir / notices.SUBSCRIBERS_DIR
    ensure_dir(where)  # refuses a planted symlink: nothing is created through it
    fd = open_dir(where)
    try:
        os.close(create_private(owner, os.O_WRONLY, dir_fd=fd))
    finally:
        os.close(fd)
    # A job that ended before the file was there posted without it: post now. The notice id
    # is fixed per job, so an inbox that got it already drops this copy.
    st = current_status(store, job_id)
    if st.active and not (st.status == "waiting" and st.keep_alive):
        return False
    notices.retell(store.root, job_id)
    return True
