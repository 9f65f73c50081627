"""Missions on disk: `.specialists/missions/<id>/`, one directory each.

    mission.json      the mission (codec.py): rewritten whole, atomically, under the lock
    state.json        the JSON `state` workflows share (state.py), at most 256 KiB
    lock              flock'd for every change of either file
    .by-job/<job id>  which mission a job is linked to (a few bytes), so a job's news
                      finds its mission without reading every mission (goal.py)

Directories are 0700 and files 0600. A new mission is built in a hidden directory and renamed
into place, so a failed create (a full disk) leaves nothing a reader would see. A damaged
mission (bad JSON, a FIFO or a symlink where a file or the directory belongs) is one warning
for that mission; the others are still listed. Every change also refreshes the mission's line
in the user-level index across projects (index.py); a failure there is a warning, never lost
mission data.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from specialists.base.errors import NotFound, SpecialistsError, StoreError, UserError
from specialists.features.missions import index
from specialists.features.missions.codec import dump, mission_from_dict, mission_to_dict
from specialists.features.missions.model import Mission, check_id
from specialists.store import recorddirs
from specialists.store.atomic import write_atomic
from specialists.store.files import ensure_dir, read_bytes, read_object
from specialists.store.ids import is_job_id

MISSIONS_DIR = "missions"
BY_JOB = ".by-job"
MISSION_FILE = "mission.json"
MAX_MISSION_FILE = 8 << 20
T = TypeVar("T")


@dataclass(frozen=True)
class DamagedMission:
    """A mission directory that could not be read: shown, never fatal to the others."""

    id: str
    problem: str


class MissionStore:
    def __init__(self, state_root: Path, *, index_dir: Path | None = None) -> None:
        self.root = state_root / MISSIONS_DIR
        self.index_dir = index_dir  # None: the user's (index.default_dir()); tests pass one
        self.warnings: list[str] = []  # index problems of the changes made through this store

    def dir(self, mission_id: str) -> Path:
        return self.root / check_id(mission_id)

    def _real_dir(self, mission_id: str) -> Path:
        return recorddirs.real_dir(self.dir(mission_id), _missing(mission_id))

    # --- reading --------------------------------------------------------------------------

    def ids(self) -> list[str]:
        return recorddirs.ids(self.root)

    def load(self, mission_id: str) -> Mission:
        path = self._real_dir(mission_id) / MISSION_FILE
        try:
            mission = mission_from_dict(read_object(path, MAX_MISSION_FILE))
        except FileNotFoundError:
            raise StoreError(
                f"mission {mission_id} is damaged: {MISSION_FILE} is missing"
            ) from None
        except SpecialistsError as exc:
            raise StoreError(f"mission {mission_id} is damaged: {exc.message}") from None
        if mission.id != mission_id:
            raise StoreError(f"mission {mission_id} is damaged: its file names {mission.id}")
        return mission

    def all(self) -> Iterator[Mission | DamagedMission]:
        for mission_id in self.ids():
            try:
                yield self.load(mission_id)
            except (SpecialistsError, OSError) as exc:
                problem = str(exc) if isinstance(exc, OSError) else exc.message
                yield DamagedMission(mission_id, problem)

    def mission_of_job(self, job_id: str) -> str | None:
        """The mission `job_id` is linked to, or None (cheap: one small read)."""
        if not is_job_id(job_id):
            return None
        try:
            raw = read_bytes(self.root / BY_JOB / job_id, 256)
        except FileNotFoundError:
            return None
        name = raw.decode("ascii", "replace").strip()
        try:
            return check_id(name)
        except UserError:
            raise StoreError(f"{self.root / BY_JOB / job_id} does not name a mission") from None

    # --- changing -------------------------------------------------------------------------

    def create(self, mission: Mission, *, now_ms: int) -> None:
        """Write a new mission whole, or nothing (an existing id is refused)."""

        def fill(staging: Path) -> None:
            write_atomic(staging / MISSION_FILE, dump(mission_to_dict(mission)))

        exists = UserError(f"mission {mission.id!r} exists already", hint="pick another id")
        recorddirs.create_whole(self.dir(mission.id), fill, exists, now_ms=now_ms)
        for run in mission.runs:
            self._point(run.job_id, mission.id)
        self._index(mission)

    def locked(self, mission_id: str) -> contextlib.AbstractContextManager[Path]:
        return recorddirs.locked(self.dir(mission_id), _missing(mission_id))

    def update(self, mission_id: str, change: Callable[[Mission], tuple[Mission, T]]) -> T:
        """Load, change and save the mission under its lock; returns what `change` returned.
        A refused change (UserError) writes nothing."""
        with self.locked(mission_id) as path:
            before = self.load(mission_id)
            after, outcome = change(before)
            if after is not before:
                write_atomic(path / MISSION_FILE, dump(mission_to_dict(after)))
                for job_id in after.run_ids() - before.run_ids():
                    self._point(job_id, mission_id)
        if after is not before:
            self._index(after)
        return outcome

    def remove(self, mission_id: str) -> None:
        """Delete a mission (gc): renamed aside under its lock, then removed, with the
        pointers of its runs and its line in the user index."""
        mission = self.load(mission_id)
        recorddirs.remove_whole(self.dir(mission_id), _missing(mission_id))
        for job_id in mission.run_ids():
            with contextlib.suppress(FileNotFoundError):
                if self.mission_of_job(job_id) == mission_id:
                    os.unlink(self.root / BY_JOB / job_id)
        self._record_index_problem(index.forget, mission)

    # --- internals ------------------------------------------------------------------------

    def _point(self, job_id: str, mission_id: str) -> None:
        if not is_job_id(job_id):
            return
        folder = self.root / BY_JOB
        ensure_dir(folder)
        write_atomic(folder / job_id, mission_id.encode() + b"\n")

    def _index(self, mission: Mission) -> None:
        self._record_index_problem(index.record, mission)

    def _record_index_problem(self, action: Callable[..., None], mission: Mission) -> None:
        try:
            action(self.index_dir or index.default_dir(), self.root.parent, mission)
        except (OSError, SpecialistsError) as exc:
            what = exc.message if isinstance(exc, SpecialistsError) else str(exc)
            self.warnings.append(f"the user-level mission index was not updated: {what}")


def _missing(mission_id: str) -> NotFound:
    return NotFound(f"no mission {mission_id!r}", hint="see: specialists mission list")
