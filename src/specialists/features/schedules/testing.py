"""A launcher double for schedule tests: records launches, jobs stay active until told."""

from __future__ import annotations

from specialists.base.errors import UserError
from specialists.features.schedules.model import Schedule


class RecordingLauncher:
    def __init__(self) -> None:
        self.launched: list[tuple[str, int, str]] = []  # (schedule id, slot, job id)
        self.active: set[str] = set()
        self.refuse: str | None = None  # a message: the next launches are refused

    def launch(self, schedule: Schedule, slot_ms: int) -> str:
        if self.refuse is not None:
            raise UserError(self.refuse)
        job_id = f"{len(self.launched):08x}"
        self.launched.append((schedule.id, slot_ms, job_id))
        self.active.add(job_id)
        return job_id

    def is_active(self, job_id: str) -> bool:
        return job_id in self.active

    def finish_all(self) -> None:
        self.active.clear()
