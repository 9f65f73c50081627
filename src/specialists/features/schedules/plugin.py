"""What schedules add: the `schedule` noun (its command and its MCP tool)."""

from __future__ import annotations

from specialists.base.ops import register_noun


def register() -> None:
    register_noun("schedule", "specialists.features.schedules.verbs:SCHEDULE")
