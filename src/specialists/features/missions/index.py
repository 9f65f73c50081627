"""The user-level index of missions across projects: pointers, never the missions themselves.

    $XDG_STATE_HOME/specialists/missions/<project hash>-<mission id>.json
        {"id", "title", "status", "updated_ms", "project_root"}

One small document per mission in a Record of kind `mission-index` (store/kinds.py), so two
projects changing missions at once never contend for one file. The project's own mission.json
stays authoritative: the index only says where to look (`mission list --global`), and a
pointer whose mission is gone is shown as such, not trusted.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from specialists.base.errors import SpecialistsError
from specialists.store.fields import Declared
from specialists.store.kinds import MISSION_INDEX
from specialists.store.paths import user_state_dir

if TYPE_CHECKING:
    from specialists.features.missions.model import Mission

MAX_LISTED = 2000  # a global list reads at most this many pointers (newest first)


class Pointer(Declared):
    _what = "entry"
    id: str
    title: str
    status: str
    updated_ms: int
    project_root: str
    state_root: str

    @property
    def present(self) -> bool:
        """The project still has the mission."""
        return os.path.isfile(os.path.join(self.state_root, "missions", self.id, "mission.json"))


def default_dir() -> Path:
    return Path(user_state_dir()) / "missions"


def _name(state_root: Path, mission_id: str) -> str:
    digest = hashlib.sha256(os.fsencode(os.path.abspath(state_root))).hexdigest()[:12]
    return f"{digest}-{mission_id}"


def record(index_dir: Path, state_root: Path, mission: Mission) -> None:
    m, where = mission, os.path.abspath(state_root)
    data = Pointer(m.id, m.title, m.status, m.updated_ms, m.project_root, where).to_dict()
    MISSION_INDEX.record(index_dir).replace(_name(state_root, mission.id), data)


def forget(index_dir: Path, state_root: Path, mission: Mission) -> None:
    MISSION_INDEX.record(index_dir).remove(_name(state_root, mission.id))


def pointers(index_dir: Path) -> tuple[list[Pointer], list[str]]:
    """Every pointer (newest first), and one problem line per unreadable one."""
    shelf = MISSION_INDEX.record(index_dir)
    found: list[Pointer] = []
    problems: list[str] = []
    for name in shelf.docs():
        try:
            found.append(Pointer.from_dict(shelf.read(name) or {}))
        except (SpecialistsError, OSError) as exc:
            problems.append(f"mission index {name}.json: {exc}")
    found.sort(key=lambda p: p.updated_ms, reverse=True)
    return found[:MAX_LISTED], problems
