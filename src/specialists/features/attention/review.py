"""Starting the watchdog's reviewer: an ordinary background job, read-only, told the diff.

`ReviewLauncher` is the seam (the supervisor's tests use `RecordingReviews` in
attention/testing.py). The real one plans the reviewer specialist like `specialists run
--background` would, with three differences:

- it runs READ_ONLY: a reviewer that edited the tree it reviews would feed the watchdog;
- its owner is the worker's owner, so the review's answer (its end notice) reaches the
  same inbox the worker's news does, even after the worker has ended;
- job.json `watchdog.reviews` names the worker: a review job is never watched itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from specialists.features.attention.settings import WatchdogSettings
from specialists.features.attention.watchdog import Review
from specialists.store.jobs import JobStore
from specialists.store.records import JobRecord

TASK_CHARS = 2000


class ReviewLauncher(Protocol):
    def launch(self, worker: JobRecord, review: Review, diff: str, stat: str) -> str:
        """Start the review; returns its job id. Raises SpecialistsError if it cannot."""

    def is_active(self, job_id: str) -> bool:
        """Whether that review job is still starting or running."""


def review_prompt(worker: JobRecord, review: Review, diff: str, stat: str) -> str:
    task = worker.prompt.strip()
    if len(task) > TASK_CHARS:
        task = task[:TASK_CHARS] + " [...]"
    return (
        f"Review the change job {worker.id} ({worker.specialist}) made to the working tree "
        f"in {worker.cwd} (watchdog review {review.number}).\n\n"
        f"Its task was:\n{task}\n\n"
        "Look for bugs, regressions, unsafe or unintended edits and missing tests. Do not edit "
        "anything. Give your findings most severe first, each with its file and line, and end "
        "with one line: VERDICT: ok | concerns | blocker.\n\n"
        f"The change is `git diff {review.base} {review.head}` (run it, or read the files, "
        f"for more context).\n\nStat:\n{stat}\nDiff:\n{diff}"
    )


class JobReviewLauncher:
    def __init__(self, store: JobStore) -> None:
        self.store = store

    def launch(self, worker: JobRecord, review: Review, diff: str, stat: str) -> str:
        from specialists.supervise.launch import create_job, spawn_supervisor
        from specialists.supervise.plan import JobRequest, plan_job

        settings = WatchdogSettings.of_record(worker.watchdog)
        request = JobRequest(
            specialist=settings.reviewer,
            prompt=review_prompt(worker, review, diff, stat),
            cwd=Path(worker.cwd),
            permission="READ_ONLY",
            track_bead=False,
        )
        record = plan_job(self.store, request)
        marker = WatchdogSettings(enabled=False, reviewer=settings.reviewer, reviews=worker.id)
        record = record.replace(owner=list(worker.owner), watchdog=marker.to_dict())
        record, lock = create_job(self.store, record)
        spawn_supervisor(self.store, record, lock)
        return record.id

    def is_active(self, job_id: str) -> bool:
        from specialists.store.view import current_status

        if not self.store.job_dir(job_id).is_dir():
            return False
        return current_status(self.store, job_id).active
