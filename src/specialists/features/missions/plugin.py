"""What missions add to a job's life: a linked job's news drives its goal mission."""

from __future__ import annotations

from specialists.base.lazy import Lazy
from specialists.native.agent_table import register_tools
from specialists.store.news import NEWS


def register() -> None:
    register_tools("specialists.features.missions.tools:MISSION_TOOLS")
    NEWS.posters.append(Lazy("specialists.features.missions.news:post_for_job"))
