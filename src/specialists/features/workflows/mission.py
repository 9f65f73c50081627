"""A workflow run's mission: the one it was started on (`workflow run --mission ID`), or the
one of the workflow it resumes. Its script reads and writes the mission's shared state
(`runs.mission.get(key)`, `runs.mission.set(key, value)`: missions/state.py, 256 KiB, each set
merged under the mission's lock), which is how a workflow resumed after a compaction, or a
later workflow on the same mission, finds what an earlier one decided."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class MissionHandle:
    state_root: Path
    id: str

    def get(self, key: str | None = None) -> Any:
        """One key's value (None when unset), or the whole state (key None)."""
        from specialists.features.missions.state import state_get

        return state_get(self.state_root, self.id, key)

    def set(self, key: str, value: Any) -> None:
        from specialists.features.missions.state import state_set

        state_set(self.state_root, self.id, key, value)


def mission_of(state_root: Path, options: dict[str, Any]) -> MissionHandle | None:
    """The mission the workflow job's record names (chosen before it started, so the engine
    never races the link that follows its start)."""
    mission_id = options.get("mission_id")
    return MissionHandle(state_root, str(mission_id)) if mission_id else None
