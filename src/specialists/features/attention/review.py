"""Starting the watchdog's reviewer: an ordinary background job, read-only, told the diff.

It is planned as `specialists run --background` would plan it and started through the one
start (supervise/start.py) with the key `review:<worker>:<round>`, so a round is reviewed
once however often it is asked for. Three differences from a run:

- it runs READ_ONLY: a reviewer that edited the tree it reviews would feed the watchdog;
- its owner is the worker's owner, so the review's answer (its end notice) reaches the
  same inbox the worker's news does, even after the worker has ended;
- job.json `watchdog.reviews` names the worker: a review job is never watched itself.

Its agent CLI is not looked up first: a missing one ends the review job, and its notice
says so.
"""

from __future__ import annotations

from pathlib import Path

from specialists.features.attention.settings import WatchdogSettings
from specialists.features.attention.watchdog import Review
from specialists.store.jobs import JobStore
from specialists.store.records import JobRecord

TASK_CHARS = 2000


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


def start_review(store: JobStore, worker: JobRecord, review: Review, diff: str, stat: str) -> str:
    """Start the review; returns its job id. Raises SpecialistsError if it cannot."""
    from specialists.supervise.plan import JobRequest, plan_job
    from specialists.supervise.start import start

    def plan() -> JobRecord:
        settings = WatchdogSettings.of_record(worker.watchdog)
        request = JobRequest(
            specialist=settings.reviewer,
            prompt=review_prompt(worker, review, diff, stat),
            cwd=Path(worker.cwd),
            permission="READ_ONLY",
            track_bead=False,
        )
        marker = WatchdogSettings(enabled=False, reviewer=settings.reviewer, reviews=worker.id)
        record = plan_job(store, request)
        return record.replace(owner=list(worker.owner), watchdog=marker.to_dict())

    return start(store, plan, key=f"review:{worker.id}:{review.number}", check=False).id
