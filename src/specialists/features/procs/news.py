"""A proc job's news is its job_exit: the store's `news` seam (jobs/store.py OwnerNews) for
stores that may recover a proc job.

Crash recovery lives at the floor (jobs/recovery.py) and cannot import this room; it tells a
job's owner of the end it recorded through the store's `news`, after the final status is
written. `ProcNews` wraps the completion notices (notices.py) and, when the end was written
by recovery (the last event says `recovered`) for a proc job, posts that job's one job_exit
(procs/exit.py). A supervisor's own end needs nothing here: it posted the job_exit before
its final status (supervise/record.py). Kept small: `status` loads this module.
"""

from __future__ import annotations

from pathlib import Path

TYPE_CHECKING = False  # `typing` costs ~10 ms, and the hooks' path loads this module
if TYPE_CHECKING:
    from specialists.store.jobs import OwnerNews


class ProcNews:
    def __init__(self, inner: OwnerNews | None) -> None:
        self.inner = inner

    def post_for_job(self, state_dir: Path, job_id: str) -> bool:
        from specialists.features.procs.exit import post_if_recovered

        told = self.inner.post_for_job(state_dir, job_id) if self.inner is not None else False
        post_if_recovered(state_dir, job_id)
        return told

    def clear(self, state_dir: Path, job_id: str) -> None:
        if self.inner is not None:
            self.inner.clear(state_dir, job_id)
