"""Schedules on disk: `.specialists/schedules/<id>/`, one Record each (its files: kinds.py
SCHEDULE). Every change holds its lock, so state.json has one writer at a time. A slot's job
is a keyed start (fire.py); a `fire-<slot>` lease left by a release before 0.2 is read as
"claimed", pruned, and never written again.

A new schedule is made whole or not at all (Record.create), so a failed create leaves nothing
a reader would see. A damaged schedule is reported, never fatal to the rest.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specialists.base.errors import NotFound, SpecialistsError, StoreError, UserError
from specialists.features.schedules.model import (
    Schedule,
    ScheduleState,
    check_id,
    schedule_from_dict,
    schedule_to_dict,
)
from specialists.store.kinds import SCHEDULE
from specialists.store.record import Record

SCHEDULES_DIR = "schedules"
MAX_HISTORY = 500
MAX_EVENTS = 500
MAX_RECEIPTS = 200
TRIM_BYTES = 256 << 10  # a log past this is cut to its last MAX_HISTORY lines


@dataclass(frozen=True)
class Damaged:
    """A schedule directory that could not be read: shown, never fatal to the others."""

    id: str
    problem: str


class ScheduleStore:
    def __init__(self, state_root: Path, *, records: Record | None = None) -> None:
        self.root = state_root / SCHEDULES_DIR
        self.records = records if records is not None else SCHEDULE.record(self.root)

    def dir(self, schedule_id: str) -> Path:
        return self.root / check_id(schedule_id)

    def _rec(self, schedule_id: str) -> Record:
        """The schedule's record, refused when it is missing (or a planted link)."""
        rec = self.records.sub(check_id(schedule_id))
        if not rec.exists():
            if os.path.islink(self.dir(schedule_id)):
                raise StoreError(f"{self.dir(schedule_id)} is a symbolic link; not followed")
            raise _missing(schedule_id)
        return rec

    # --- reading --------------------------------------------------------------------------

    def ids(self) -> list[str]:
        return self.records.children()

    def load(self, schedule_id: str) -> tuple[Schedule, ScheduleState]:
        rec = self._rec(schedule_id)
        definition = _doc(rec, "definition")
        try:
            schedule = schedule_from_dict(definition)
        except (UserError, StoreError) as exc:  # StoreError: its target, read by declaration
            raise UserError(f"schedule {schedule_id} is damaged: {exc.message}") from None
        state = ScheduleState.from_dict(_doc(rec, "state"), source=_damaged(schedule_id))
        if schedule.id != schedule_id:
            raise UserError(
                f"schedule {schedule_id} is damaged: its definition names {schedule.id}"
            )
        return schedule, state

    def load_state(self, schedule_id: str) -> ScheduleState:
        return ScheduleState.from_dict(
            _doc(self._rec(schedule_id), "state"), source=_damaged(schedule_id)
        )

    def due_ms(self, schedule_id: str) -> int | None:
        """Only state.json's next_due_ms: the fast path of `run-due` over every schedule."""
        data = self.records.sub(check_id(schedule_id)).read("state")
        if data is None:
            raise NotFound(f"no schedule {schedule_id!r}")
        due = data.get("next_due_ms")
        if due is not None and (type(due) is not int):
            raise UserError(f"schedule {schedule_id} is damaged: bad next_due_ms")
        return due

    def all(self) -> Iterator[tuple[Schedule, ScheduleState] | Damaged]:
        for schedule_id in self.ids():
            try:
                yield self.load(schedule_id)
            except (SpecialistsError, OSError) as exc:
                yield Damaged(schedule_id, str(exc) if isinstance(exc, OSError) else exc.one_line())

    def history(self, schedule_id: str, limit: int = MAX_HISTORY) -> list[dict[str, Any]]:
        return list(self.records.sub(check_id(schedule_id)).lines("history").entries)[-limit:]

    def events(self, schedule_id: str) -> list[dict[str, Any]]:
        return list(self.records.sub(check_id(schedule_id)).lines("events").entries)

    def receipt(self, schedule_id: str, slot_ms: int) -> dict[str, Any] | None:
        return self._runs(schedule_id).read(str(slot_ms))

    def lease_exists(self, schedule_id: str, slot_ms: int) -> bool:
        return os.path.lexists(self.dir(schedule_id) / f"fire-{slot_ms}")

    # --- changing -------------------------------------------------------------------------

    def create(self, schedule: Schedule, state: ScheduleState, *, now_ms: int) -> None:
        """Write a new schedule whole, or nothing (an existing id is refused)."""

        def fill(new: Record) -> None:
            new.sub("runs").ensure()
            new.replace("definition", schedule_to_dict(schedule))
            new.replace("state", state.to_dict())
            new.append("events", {"ts": now_ms, "event": "created"})

        if not self.records.sub(check_id(schedule.id)).create(fill):
            raise UserError(
                f"schedule {schedule.id!r} exists already",
                hint="pick another id, or delete it first",
            )

    @contextlib.contextmanager
    def locked(self, schedule_id: str) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            try:
                stack.enter_context(self._rec(schedule_id).locked(create=False))
            except FileNotFoundError:
                raise _missing(schedule_id) from None  # removed while we waited
            yield

    def save_definition(self, schedule: Schedule) -> None:
        self.records.sub(check_id(schedule.id)).replace("definition", schedule_to_dict(schedule))

    def save_state(self, schedule_id: str, state: ScheduleState) -> None:
        self.records.sub(check_id(schedule_id)).replace("state", state.to_dict())

    def write_receipt(self, schedule_id: str, slot_ms: int, receipt: dict[str, Any]) -> None:
        self._runs(schedule_id).replace(str(slot_ms), receipt)

    def record(self, schedule_id: str, entry: dict[str, Any]) -> None:
        """Append one outcome to the history (under the schedule's lock)."""
        _append(self.records.sub(check_id(schedule_id)), "history", entry, MAX_HISTORY)

    def note(self, schedule_id: str, entry: dict[str, Any]) -> None:
        _append(self.records.sub(check_id(schedule_id)), "events", entry, MAX_EVENTS)

    def prune(self, schedule_id: str) -> None:
        """Drop receipts and leases beyond the newest MAX_RECEIPTS slots."""
        runs = self._runs(schedule_id)
        for slot in sorted(int(n) for n in runs.docs() if n.isdigit())[:-MAX_RECEIPTS]:
            runs.remove(str(slot))
        base = self.dir(schedule_id)
        with contextlib.suppress(FileNotFoundError):
            leases = sorted(
                int(n[5:]) for n in os.listdir(base) if n.startswith("fire-") and n[5:].isdigit()
            )
            for slot in leases[:-MAX_RECEIPTS]:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(base / f"fire-{slot}")

    def delete(self, schedule_id: str) -> None:
        """Remove a schedule: removed whole under its lock (no firing can start after).
        Jobs it launched are not touched."""
        if not self._rec(schedule_id).destroy():
            raise _missing(schedule_id)

    def _runs(self, schedule_id: str) -> Record:
        return self.records.sub(check_id(schedule_id)).sub("runs")


def _doc(rec: Record, name: str) -> dict[str, Any]:
    data = rec.read(name)
    if data is None:
        raise StoreError(f"{rec}: {name}.json is missing")
    return data


def _damaged(schedule_id: str) -> str:
    return f"schedule {schedule_id} is damaged: state.json"


def _missing(schedule_id: str) -> NotFound:
    return NotFound(f"no schedule {schedule_id!r}", hint="see: specialists schedule list")


def _append(rec: Record, log: str, entry: dict[str, Any], keep: int) -> None:
    """One line, and past TRIM_BYTES the log cut to its last `keep` lines."""
    rec.append(log, entry)
    if rec.size(log) > TRIM_BYTES:
        rec.trim(log, keep)
