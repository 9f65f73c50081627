"""The review launcher's double: records each review it is asked to start.

`RecordingReviews.launch` keeps the worker, the decision, the diff and its stat, and returns
a made-up job id; `active` says which of those ids `is_active` reports as running, so a
test decides when a review is over. `fail_with` makes the next launch raise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specialists.base.errors import SpecialistsError
from specialists.features.attention.watchdog import Review
from specialists.store.records import JobRecord


@dataclass(frozen=True)
class LaunchedReview:
    worker: str
    review: Review
    diff: str
    stat: str


@dataclass
class RecordingReviews:
    launched: list[LaunchedReview] = field(default_factory=list)
    active: set[str] = field(default_factory=set)
    fail_with: str | None = None

    def launch(self, worker: JobRecord, review: Review, diff: str, stat: str) -> str:
        if self.fail_with is not None:
            raise SpecialistsError(self.fail_with)
        self.launched.append(LaunchedReview(worker.id, review, diff, stat))
        job_id = f"{len(self.launched):08x}"
        self.active.add(job_id)
        return job_id

    def is_active(self, job_id: str) -> bool:
        return job_id in self.active
