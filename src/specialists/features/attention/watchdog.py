"""The watchdog's decision at a safe end of turn: review the change, or not (pure).

The supervisor takes the tree's state key (tree.py) when the job starts, and again at each
end of a turn that did not fail. `Watchdog.turn_ended` compares it with the key of the last
review (or of the start):

- the same key: nothing changed, or what changed was reverted: `Unchanged`;
- a review of this job is still running: `Busy` (the key of the last review stays, so the
  next end of turn reviews both turns' change together);
- the job's budget of reviews is spent: `ReviewBudgetSpent`, said once;
- otherwise `Review(base, head)`; the supervisor starts the reviewer and calls `launched`.

Bounded: one review at a time, at most `max_reviews` per job, and a review job is never
watched itself (WatchdogSettings.of_record).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from specialists.features.attention.settings import WatchdogSettings


@dataclass(frozen=True)
class Unchanged:
    kind: Literal["unchanged"] = "unchanged"


@dataclass(frozen=True)
class Busy:
    review_id: str
    kind: Literal["busy"] = "busy"


@dataclass(frozen=True)
class ReviewBudgetSpent:
    reviews: int
    first: bool  # the first time it is spent: tell the owner once
    kind: Literal["spent"] = "spent"


@dataclass(frozen=True)
class Review:
    base: str
    head: str
    number: int  # 1 for the job's first review
    kind: Literal["review"] = "review"


Decision = Unchanged | Busy | ReviewBudgetSpent | Review


class Watchdog:
    def __init__(self, settings: WatchdogSettings) -> None:
        self.settings = settings
        self.reviewed: str | None = None  # the key of the last review, or of the start
        self.reviews = 0
        self.active: str | None = None  # the running review's job id
        self._told_spent = False

    def began(self, key: str) -> None:
        self.reviewed = key

    def turn_ended(self, key: str, *, review_active: bool) -> Decision:
        if self.reviewed is None:  # the start's key was unknown: compare from here on
            self.reviewed = key
            return Unchanged()
        if key == self.reviewed:
            return Unchanged()
        if self.active is not None:
            if review_active:
                return Busy(self.active)
            self.active = None
        if self.reviews >= self.settings.max_reviews:
            first = not self._told_spent
            self._told_spent = True
            return ReviewBudgetSpent(self.reviews, first)
        return Review(self.reviewed, key, self.reviews + 1)

    def launched(self, review: Review, job_id: str) -> None:
        self.reviewed = review.head
        self.reviews += 1
        self.active = job_id
