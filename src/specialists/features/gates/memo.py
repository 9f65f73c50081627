"""The gate memo: `.specialists/gates/memo/<key>.json`, one passing result per key.

Only passes are memoized. A failure is run again every time: a flaky failure kept would block
a child forever, while a flaky pass lets through only work that passed once on exactly this
state. Timeouts and commands that never started are environmental and never kept either.

The memo is a Record of kind `gate-memo` (store/kinds.py): entries are written atomically and
0600, read without following a link or opening a FIFO, and size-capped. A damaged, planted or
oversized entry is a miss with a warning, never an error and never trusted. The store keeps at
most `MAX_ENTRIES`; the oldest are removed past that.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from specialists.base.errors import Bug, StoreError
from specialists.store.kinds import GATE_MEMO
from specialists.store.paths import state_dir

SCHEMA = 1
MAX_ENTRIES = 4096
_KEY = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class MemoEntry:
    key: str
    command: str
    exit_code: int
    duration_ms: int
    tail: str
    at_ms: int
    evidence: str | None  # the evidence file of the run that passed

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, **asdict(self)}


def memo_dir(project: Path) -> Path:
    return state_dir(project) / "gates" / "memo"


def lookup(project: Path, key: str) -> tuple[MemoEntry | None, str | None]:
    """The entry for `key`, or None; the second value is a warning (a damaged entry)."""
    path = memo_dir(project) / f"{_checked(key)}.json"
    try:
        data = GATE_MEMO.record(memo_dir(project)).read(key)
    except (StoreError, OSError) as exc:
        return None, f"gate memo entry ignored: {_one_line(exc)}"
    if data is None:
        return None, None
    entry = _entry(data, key)
    if entry is None:
        return None, f"gate memo entry ignored: {path} is not a memo entry for this key"
    return entry, None


def store(project: Path, entry: MemoEntry) -> str | None:
    """Keep `entry`; a warning when it could not be kept (the gate's verdict stands)."""
    folder = memo_dir(project)
    try:
        GATE_MEMO.record(folder).replace(_checked(entry.key), entry.to_dict())
        _trim(folder)
    except (StoreError, OSError) as exc:
        return f"gate memo not written: {_one_line(exc)}"
    return None


def _trim(folder: Path) -> None:
    """Past MAX_ENTRIES, remove the oldest regular entry files (never anything else)."""
    with os.scandir(folder) as it:
        found = [
            (e.stat(follow_symlinks=False).st_mtime_ns, e.name)
            for e in it
            if e.name.endswith(".json")
            and _KEY.fullmatch(e.name[:-5])
            and stat.S_ISREG(e.stat(follow_symlinks=False).st_mode)
        ]
    if len(found) <= MAX_ENTRIES:
        return
    found.sort()
    for _, name in found[: len(found) - MAX_ENTRIES]:
        try:
            os.unlink(folder / name)
        except FileNotFoundError:
            continue  # trimmed by another writer meanwhile


def _entry(data: dict[str, Any], key: str) -> MemoEntry | None:
    try:
        entry = MemoEntry(
            key=data["key"],
            command=data["command"],
            exit_code=data["exit_code"],
            duration_ms=data["duration_ms"],
            tail=data["tail"],
            at_ms=data["at_ms"],
            evidence=data.get("evidence"),
        )
    except KeyError:
        return None
    fine = (
        data.get("schema") == SCHEMA
        and entry.key == key
        and isinstance(entry.command, str)
        and type(entry.exit_code) is int
        and entry.exit_code == 0
        and type(entry.duration_ms) is int
        and isinstance(entry.tail, str)
        and type(entry.at_ms) is int
        and (entry.evidence is None or isinstance(entry.evidence, str))
    )
    return entry if fine else None


def _checked(key: str) -> str:
    if not _KEY.fullmatch(key):
        raise Bug(f"gate memo key {key[:80]!r} is not a SHA-256 hex digest")
    return key


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, StoreError):
        return exc.one_line()
    return str(exc)
