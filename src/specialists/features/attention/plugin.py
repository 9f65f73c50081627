"""What attention adds to a job's life: its thresholds and watchdog resolved at plan time,
and a companion that raises needs_attention and runs the watchdog's reviews."""

from __future__ import annotations

from specialists.base.lazy import Lazy
from specialists.supervise.hooks import HOOKS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from specialists.supervise.hooks import Planning


def register() -> None:
    HOOKS.planning.append(_settings)
    HOOKS.companions.append(Lazy("specialists.features.attention.companion:companion"))


def _settings(planning: Planning) -> Mapping[str, Any]:
    from specialists.features.attention.settings import resolve_attention, resolve_watchdog

    spec, request, config = planning.spec, planning.request, planning.config
    attention = resolve_attention(
        config.get("attention"), spec.attention, request.attention_after, spec.thinking_level
    )
    watchdog = resolve_watchdog(config.get("watchdog"), spec.watchdog, request.watchdog)
    return {"attention": attention.to_dict(), "watchdog": watchdog.to_dict()}
