"""What missions add to a job's life: a linked job's news drives its goal mission (a
subscriber of the job's one teller); and the `mission` noun (its command and its agent
tool)."""

from __future__ import annotations

from specialists.base.lazy import Lazy
from specialists.base.ops import register_noun
from specialists.native.agent_table import register_tools
from specialists.supervise.hooks import HOOKS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def register() -> None:
    register_noun("mission", "specialists.features.missions.verbs:MISSION")
    register_tools("specialists.features.missions.verbs:MISSION")
    HOOKS.heard.append(Lazy("specialists.features.missions.news:heard"))
    HOOKS.clean.append(_cleaned)


def _cleaned(state_root: Path) -> tuple[list[str], list[str]]:
    """Closed missions past SPECIALISTS_MISSION_TTL_DAYS (30) go with `clean` (missions.md)."""
    from specialists.features.missions.ops import prune
    from specialists.features.missions.store import MissionStore

    pruned = prune(MissionStore(state_root))
    said = [f"removed {len(pruned.removed)} closed mission(s)"] if pruned.removed else []
    return said, list(pruned.warnings)
