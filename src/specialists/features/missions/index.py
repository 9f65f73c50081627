"""The user-level index of missions across projects: pointers, never the missions themselves.

    $XDG_STATE_HOME/specialists/missions/<project hash>-<mission id>.json
        {"id", "title", "status", "updated_ms", "project_root"}

One small file per mission (written atomically, 0600), so two projects changing missions at
once never contend for one file. The project's own mission.json stays authoritative: the
index only says where to look (`mission list --global`), and a pointer whose mission is gone
is shown as such, not trusted.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from specialists.base.errors import SpecialistsError
from specialists.features.missions.codec import dump
from specialists.store.atomic import write_atomic
from specialists.store.files import ensure_dir, read_object
from specialists.store.paths import user_state_dir

if TYPE_CHECKING:
    from specialists.features.missions.model import Mission

MAX_POINTER = 64 << 10
MAX_LISTED = 2000  # a global list reads at most this many pointers (newest first)


@dataclass(frozen=True)
class Pointer:
    id: str
    title: str
    status: str
    updated_ms: int
    project_root: str
    present: bool  # the project still has the mission


def default_dir() -> Path:
    return user_state_dir() / "missions"


def _name(state_root: Path, mission_id: str) -> str:
    digest = hashlib.sha256(os.fsencode(os.path.abspath(state_root))).hexdigest()[:12]
    return f"{digest}-{mission_id}.json"


def record(index_dir: Path, state_root: Path, mission: Mission) -> None:
    os.makedirs(index_dir.parent, 0o700, exist_ok=True)  # $XDG_STATE_HOME/specialists
    ensure_dir(index_dir)
    data = {
        "id": mission.id,
        "title": mission.title,
        "status": mission.status,
        "updated_ms": mission.updated_ms,
        "project_root": mission.project_root,
        "state_root": os.path.abspath(state_root),
    }
    write_atomic(index_dir / _name(state_root, mission.id), dump(data))


def forget(index_dir: Path, state_root: Path, mission: Mission) -> None:
    try:
        os.unlink(index_dir / _name(state_root, mission.id))
    except FileNotFoundError:
        return


def pointers(index_dir: Path) -> tuple[list[Pointer], list[str]]:
    """Every pointer (newest first), and one problem line per unreadable one."""
    try:
        names = [n for n in os.listdir(index_dir) if n.endswith(".json") and not n.startswith(".")]
    except FileNotFoundError:
        return [], []
    found: list[Pointer] = []
    problems: list[str] = []
    for name in names:
        try:
            data = read_object(index_dir / name, MAX_POINTER)
            fields = [data.get(k) for k in ("id", "title", "status", "project_root", "state_root")]
            updated = data.get("updated_ms")
            if not all(isinstance(f, str) for f in fields) or not isinstance(updated, int):
                raise SpecialistsError("a field is missing or of the wrong type")
        except (SpecialistsError, OSError) as exc:
            problems.append(f"mission index {name}: {exc}")
            continue
        mid, title, status, project, state_root = (str(f) for f in fields)
        present = os.path.isfile(os.path.join(state_root, "missions", mid, "mission.json"))
        found.append(Pointer(mid, title, status, updated, project, present))
    found.sort(key=lambda p: p.updated_ms, reverse=True)
    return found[:MAX_LISTED], problems
