"""What missions add to a job's life: a linked job's news drives its goal mission (a
subscriber of the job's one teller); and the `mission` noun (its command and its agent
tool)."""

from __future__ import annotations

from specialists.base.lazy import Lazy
from specialists.base.ops import register_noun
from specialists.native.agent_table import register_tools
from specialists.supervise.hooks import HOOKS


def register() -> None:
    register_noun("mission", "specialists.features.missions.verbs:MISSION")
    register_tools("specialists.features.missions.verbs:MISSION")
    HOOKS.heard.append(Lazy("specialists.features.missions.news:heard"))
