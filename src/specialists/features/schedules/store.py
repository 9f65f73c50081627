"""Schedules on disk: `.specialists/schedules/<id>/`, one directory each.

    definition.json   what to run and when (rewritten only by pause and resume)
    state.json        how far firing has got: last slot handled, next slot due, counts
    history.jsonl     one line per slot outcome (fired, skipped, missed, failed,
                      interrupted), trimmed to the last MAX_HISTORY lines
    events.jsonl      what people did to it (created, paused, resumed, run-now), trimmed too
    runs/<slot>.json  a receipt per firing: its outcome and the job it launched
    fire-<slot>       (before 0.2) a firing's lease: its slot was claimed; read, pruned,
                      never written again (a slot's job is a keyed start: fire.py)
    lock              flock'd for every change, so state.json has one writer at a time

Directories are 0700 and files 0600; every whole-file write goes through `write_atomic`. A
new schedule is built in a hidden directory and renamed into place, so a failed create
leaves nothing a reader would see. A damaged schedule is reported, never fatal to the rest.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specialists.base.errors import NotFound, SpecialistsError, UserError
from specialists.features.schedules.model import (
    Schedule,
    ScheduleState,
    check_id,
    schedule_from_dict,
    schedule_to_dict,
    state_from_dict,
    state_to_dict,
)
from specialists.store import recorddirs
from specialists.store.atomic import write_atomic
from specialists.store.files import (
    create_private,
    ensure_dir,
    open_dir,
    parse_json,
    parse_object,
    read_bytes,
    read_object,
)

SCHEDULES_DIR = "schedules"
MAX_HISTORY = 500
MAX_EVENTS = 500
MAX_RECEIPTS = 200
MAX_FILE = 1 << 20
MAX_LOG = 4 << 20
TRIM_BYTES = 256 << 10  # a log past this is cut to its last MAX_HISTORY lines


@dataclass(frozen=True)
class Damaged:
    """A schedule directory that could not be read: shown, never fatal to the others."""

    id: str
    problem: str


def _dump(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, ensure_ascii=False, indent=1) + "\n").encode()


class ScheduleStore:
    def __init__(self, state_root: Path) -> None:
        self.root = state_root / SCHEDULES_DIR

    def dir(self, schedule_id: str) -> Path:
        return self.root / check_id(schedule_id)

    def _real_dir(self, schedule_id: str) -> Path:
        """The schedule's directory, refused when it is missing or a planted symlink."""
        return recorddirs.real_dir(self.dir(schedule_id), _missing(schedule_id))

    # --- reading --------------------------------------------------------------------------

    def ids(self) -> list[str]:
        return recorddirs.ids(self.root)

    def load(self, schedule_id: str) -> tuple[Schedule, ScheduleState]:
        path = self._real_dir(schedule_id)
        try:
            schedule = schedule_from_dict(read_object(path / "definition.json", MAX_FILE))
            state = state_from_dict(read_object(path / "state.json", MAX_FILE))
        except UserError as exc:
            raise UserError(f"schedule {schedule_id} is damaged: {exc.message}") from None
        if schedule.id != schedule_id:
            raise UserError(
                f"schedule {schedule_id} is damaged: its definition names {schedule.id}"
            )
        return schedule, state

    def load_state(self, schedule_id: str) -> ScheduleState:
        try:
            data = read_object(self._real_dir(schedule_id) / "state.json", MAX_FILE)
            return state_from_dict(data)
        except UserError as exc:
            raise UserError(f"schedule {schedule_id} is damaged: {exc.message}") from None

    def due_ms(self, schedule_id: str) -> int | None:
        """Only state.json's next_due_ms: the fast path of `run-due` over every schedule (one
        directory open refusing a symlink, one bounded read; no pathlib, no full parse)."""
        try:
            fd = open_dir(os.path.join(self.root, check_id(schedule_id)))
        except FileNotFoundError:
            raise NotFound(f"no schedule {schedule_id!r}") from None
        try:
            data = parse_object(read_bytes("state.json", MAX_FILE, dir_fd=fd), schedule_id)
        finally:
            os.close(fd)
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
        return self._lines(self.dir(schedule_id) / "history.jsonl")[-limit:]

    def events(self, schedule_id: str) -> list[dict[str, Any]]:
        return self._lines(self.dir(schedule_id) / "events.jsonl")

    def receipt(self, schedule_id: str, slot_ms: int) -> dict[str, Any] | None:
        try:
            return read_object(self.dir(schedule_id) / "runs" / f"{slot_ms}.json", MAX_FILE)
        except FileNotFoundError:
            return None

    def lease_exists(self, schedule_id: str, slot_ms: int) -> bool:
        return os.path.lexists(self.dir(schedule_id) / f"fire-{slot_ms}")

    # --- changing -------------------------------------------------------------------------

    def create(self, schedule: Schedule, state: ScheduleState, *, now_ms: int) -> None:
        """Write a new schedule whole, or nothing (an existing id is refused)."""

        def fill(staging: Path) -> None:
            ensure_dir(staging / "runs")
            write_atomic(staging / "definition.json", _dump(schedule_to_dict(schedule)))
            write_atomic(staging / "state.json", _dump(state_to_dict(state)))
            _append(staging / "events.jsonl", {"ts": now_ms, "event": "created"})

        exists = UserError(
            f"schedule {schedule.id!r} exists already", hint="pick another id, or delete it first"
        )
        recorddirs.create_whole(self.dir(schedule.id), fill, exists, now_ms=now_ms)

    def locked(self, schedule_id: str) -> contextlib.AbstractContextManager[Path]:
        return recorddirs.locked(self.dir(schedule_id), _missing(schedule_id))

    def save_definition(self, schedule: Schedule) -> None:
        write_atomic(self.dir(schedule.id) / "definition.json", _dump(schedule_to_dict(schedule)))

    def save_state(self, schedule_id: str, state: ScheduleState) -> None:
        write_atomic(self.dir(schedule_id) / "state.json", _dump(state_to_dict(state)))

    def write_receipt(self, schedule_id: str, slot_ms: int, receipt: dict[str, Any]) -> None:
        runs = self.dir(schedule_id) / "runs"
        ensure_dir(runs)
        write_atomic(runs / f"{slot_ms}.json", _dump(receipt))

    def record(self, schedule_id: str, entry: dict[str, Any]) -> None:
        """Append one outcome to the history (under the schedule's lock)."""
        path = self.dir(schedule_id) / "history.jsonl"
        _append(path, entry)
        _trim(path, MAX_HISTORY)

    def note(self, schedule_id: str, entry: dict[str, Any]) -> None:
        path = self.dir(schedule_id) / "events.jsonl"
        _append(path, entry)
        _trim(path, MAX_EVENTS)

    def prune(self, schedule_id: str) -> None:
        """Drop receipts and leases beyond the newest MAX_RECEIPTS slots."""
        base = self.dir(schedule_id)
        for folder, prefix, suffix in ((base / "runs", "", ".json"), (base, "fire-", "")):
            try:
                names = os.listdir(folder)
            except FileNotFoundError:
                continue
            slots = sorted(
                int(n[len(prefix) : len(n) - len(suffix)])
                for n in names
                if n.startswith(prefix)
                and n.endswith(suffix)
                and n[len(prefix) : len(n) - len(suffix)].isdigit()
            )
            for slot in slots[:-MAX_RECEIPTS]:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(folder / f"{prefix}{slot}{suffix}")

    def delete(self, schedule_id: str) -> None:
        """Remove a schedule: renamed aside under its lock (no firing can start after), then
        removed. Jobs it launched are not touched."""
        recorddirs.remove_whole(self.dir(schedule_id), _missing(schedule_id))

    # --- internals ------------------------------------------------------------------------

    @staticmethod
    def _lines(path: Path) -> list[dict[str, Any]]:
        try:
            raw = read_bytes(path, MAX_LOG)
        except FileNotFoundError:
            return []
        out = []
        for line in raw.split(b"\n"):
            if not line.strip():
                continue
            with contextlib.suppress(SpecialistsError):  # a torn line: skipped, the rest read
                value = parse_json(line, path)
                if isinstance(value, dict):
                    out.append(value)
        return out


def _missing(schedule_id: str) -> NotFound:
    return NotFound(f"no schedule {schedule_id!r}", hint="see: specialists schedule list")


def _append(path: Path, entry: dict[str, Any]) -> None:
    line = (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    fd = create_private(path, os.O_RDWR | os.O_APPEND)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line  # close a line a crash cut short
        view = memoryview(line)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _trim(path: Path, keep: int) -> None:
    """Past TRIM_BYTES, keep the last `keep` lines (rewritten atomically)."""
    if os.stat(path).st_size <= TRIM_BYTES:
        return
    lines = read_bytes(path, MAX_LOG).splitlines(keepends=True)
    write_atomic(path, b"".join(lines[-keep:]))
