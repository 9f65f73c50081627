"""What spend adds to a job's life: `[spend]` checked at plan time, and a companion that
keeps the job inside every ceiling it counts against."""

from __future__ import annotations

from specialists.base.lazy import Lazy
from specialists.supervise.hooks import HOOKS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from specialists.supervise.hooks import Planning


def register() -> None:
    HOOKS.planning.append(_check_settings)
    HOOKS.companions.append(Lazy("specialists.features.spend.companion:companion"))


def _check_settings(planning: Planning) -> Mapping[str, Any]:
    """A bad `[spend]` table refuses the run before a job exists (not a silent no-limit)."""
    from specialists.features.spend.settings import spend_settings

    spend_settings(planning.config)
    return {}
