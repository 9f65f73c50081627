"""What usage limits add to a job's life: a pause at a provider's usage limit until its reset,
instead of an error, and a hold on the provider's other jobs until then (pause.py)."""

from __future__ import annotations

from specialists.base.lazy import Lazy
from specialists.supervise.hooks import HOOKS


def register() -> None:
    HOOKS.pauses.append(Lazy("specialists.features.usage_limits.pause:LimitPause"))
