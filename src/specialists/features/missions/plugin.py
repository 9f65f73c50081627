"""What missions add to a job's life: a linked job's news drives its goal mission; and the
`mission` noun (its command and its agent tool)."""

from __future__ import annotations

from specialists.base.lazy import Lazy
from specialists.base.ops import register_noun
from specialists.native.agent_table import register_tools
from specialists.store.news import NEWS


def register() -> None:
    register_noun("mission", "specialists.features.missions.verbs:MISSION")
    register_tools("specialists.features.missions.verbs:MISSION")
    NEWS.posters.append(Lazy("specialists.features.missions.news:post_for_job"))
