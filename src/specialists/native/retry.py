"""Backoff policy for model calls. Pure: the caller sleeps, this only decides how long."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from specialists.native.model import ModelError


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 3  # retries after the first attempt, per model
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0
    max_retry_after_s: float = 60.0  # a server asking for longer than this is not waited for
    jitter: float = 0.2  # +- fraction of the delay

    def delay(
        self,
        attempt: int,
        error: ModelError,
        rand: Callable[[], float] = random.random,
    ) -> float | None:
        """Seconds to wait before retry number `attempt` (1-based), or None to give up."""
        if not error.retryable or attempt > self.max_retries:
            return None
        if error.retry_after is not None:
            if error.retry_after > self.max_retry_after_s:
                return None
            return max(0.0, error.retry_after)
        backoff = min(self.max_delay_s, self.base_delay_s * (2 ** (attempt - 1)))
        spread = backoff * self.jitter * (2 * rand() - 1)
        return max(0.0, backoff + spread)
