"""Missions on disk: `.specialists/missions/<id>/`, one Record each (kinds.py MISSION), and
`.by-job/<job>.json` naming a job's mission (MISSION_LINKS; 0.1.0's `<job>` is still read).

A new mission is made whole or not at all (Record.create), so a failed create (a full disk)
leaves nothing a reader would see. A damaged mission (bad JSON, a FIFO or a symlink where a
file or the directory belongs) is one warning for that mission; the others are still listed.
Every change also refreshes the mission's line in the user-level index across projects
(index.py); a failure there is a warning, never lost mission data.
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
from specialists.features.missions.model import Mission, check_id
from specialists.store import kinds
from specialists.store.files import read_bytes
from specialists.store.ids import is_job_id
from specialists.store.record import Record

MISSIONS_DIR = "missions"
BY_JOB = ".by-job"
MISSION = "mission"  # mission.json
MISSION_FILE = "mission.json"
T = TypeVar("T")


@dataclass(frozen=True)
class DamagedMission:
    """A mission directory that could not be read: shown, never fatal to the others."""

    id: str
    problem: str


class MissionStore:
    def __init__(
        self, state_root: Path, *, index_dir: Path | None = None, records: Record | None = None
    ) -> None:
        self.root = state_root / MISSIONS_DIR
        self.records = records if records is not None else kinds.MISSION.record(self.root)
        self.links = (
            records.sub(BY_JOB)
            if records is not None
            else kinds.MISSION_LINKS.record(self.root / BY_JOB)
        )
        self.index_dir = index_dir  # None: the user's (index.default_dir()); tests pass one
        self.warnings: list[str] = []  # index problems of the changes made through this store

    def dir(self, mission_id: str) -> Path:
        return self.root / check_id(mission_id)

    def record(self, mission_id: str) -> Record:
        """The mission's record, refused when it is missing (or a planted link)."""
        rec = self.records.sub(check_id(mission_id))
        if not rec.exists():
            if os.path.islink(self.dir(mission_id)):
                raise StoreError(f"{self.dir(mission_id)} is a symbolic link; not followed")
            raise _missing(mission_id)
        return rec

    # --- reading --------------------------------------------------------------------------

    def ids(self) -> list[str]:
        return self.records.children()

    def load(self, mission_id: str) -> Mission:
        rec = self.record(mission_id)
        try:
            data = rec.read(MISSION)
            if data is None:
                raise StoreError(f"mission {mission_id} is damaged: {MISSION_FILE} is missing")
            mission = Mission.from_dict(data)
        except SpecialistsError as exc:
            if exc.message.startswith(f"mission {mission_id} is damaged"):
                raise
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
        data = self.links.read(job_id)
        name = data.get("mission") if data is not None else self._legacy_link(job_id)
        if name is None:
            return None
        try:
            return check_id(name)
        except UserError:
            raise StoreError(f"{self.root / BY_JOB / job_id} does not name a mission") from None

    def _legacy_link(self, job_id: str) -> str | None:
        """0.1.0's pointer: the mission id as text in `.by-job/<job>`."""
        try:
            raw = read_bytes(self.root / BY_JOB / job_id, 256)
        except FileNotFoundError:
            return None
        return raw.decode("ascii", "replace").strip()

    # --- changing -------------------------------------------------------------------------

    def create(self, mission: Mission, *, now_ms: int) -> None:
        """Write a new mission whole, or nothing (an existing id is refused)."""
        made = self.records.sub(check_id(mission.id)).create(
            lambda new: new.replace(MISSION, mission.to_dict())
        )
        if not made:
            raise UserError(f"mission {mission.id!r} exists already", hint="pick another id")
        for run in mission.runs:
            self._point(run.job_id, mission.id)
        self._record_index_problem(index.record, mission)

    @contextlib.contextmanager
    def locked(self, mission_id: str) -> Iterator[Record]:
        with contextlib.ExitStack() as stack:
            rec = self.record(mission_id)
            try:
                stack.enter_context(rec.locked(create=False))
            except FileNotFoundError:
                raise _missing(mission_id) from None  # removed while we waited
            yield rec

    def update(self, mission_id: str, change: Callable[[Mission], tuple[Mission, T]]) -> T:
        """Load, change and save the mission under its lock; returns what `change` returned.
        A refused change (UserError) writes nothing."""
        with self.locked(mission_id) as rec:
            before = self.load(mission_id)
            after, outcome = change(before)
            if after is not before:
                rec.replace(MISSION, after.to_dict())
                for job_id in after.run_ids() - before.run_ids():
                    self._point(job_id, mission_id)
        if after is not before:
            self._record_index_problem(index.record, after)
        return outcome

    def remove(self, mission_id: str) -> None:
        """Delete a mission (gc): removed whole under its lock, then the pointers of its
        runs and its line in the user index."""
        mission = self.load(mission_id)
        if not self.record(mission_id).destroy():
            raise _missing(mission_id)
        for job_id in mission.run_ids():
            with contextlib.suppress(FileNotFoundError):
                if self.mission_of_job(job_id) == mission_id:
                    self.links.remove(job_id)
                    os.unlink(self.root / BY_JOB / job_id)  # 0.1.0's pointer, if any
        self._record_index_problem(index.forget, mission)

    # --- internals ------------------------------------------------------------------------

    def _point(self, job_id: str, mission_id: str) -> None:
        if is_job_id(job_id):
            self.links.replace(job_id, {"mission": mission_id})

    def _record_index_problem(self, action: Callable[..., None], mission: Mission) -> None:
        try:
            action(self.index_dir or index.default_dir(), self.root.parent, mission)
        except (OSError, SpecialistsError) as exc:
            what = exc.message if isinstance(exc, SpecialistsError) else str(exc)
            self.warnings.append(f"the user-level mission index was not updated: {what}")


def _missing(mission_id: str) -> NotFound:
    return NotFound(f"no mission {mission_id!r}", hint="see: specialists mission list")
