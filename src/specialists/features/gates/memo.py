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
from pathlib import Path
from typing import Any

from specialists.base.errors import Bug, StoreError
from specialists.store.fields import Declared
from specialists.store.kinds import GATE_MEMO
from specialists.store.paths import state_dir

SCHEMA = 1
MAX_ENTRIES = 4096
_KEY = re.compile(r"[0-9a-f]{64}")


class MemoEntry(Declared):
    _what = "gate memo entry"
    key: str
    command: str
    exit_code: int
    duration_ms: int
    tail: str
    at_ms: int
    evidence: str | None = None  # the evidence file of the run that passed

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, **super().to_dict()}

    @classmethod
    def _before_read(cls, data: dict[str, Any], where: str) -> None:
        if data.get("schema") != SCHEMA:
            raise StoreError(f"{where}: schema {data.get('schema')!r} is not {SCHEMA}")

    @classmethod
    def _after_read(cls, record: MemoEntry, where: str) -> None:
        if record.exit_code != 0:  # only passes are kept
            raise StoreError(f"{where}: exit code {record.exit_code} is not a pass")


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
    try:
        entry = MemoEntry.from_dict(data)
    except StoreError:
        entry = None
    if entry is None or entry.key != key:
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


def _checked(key: str) -> str:
    if not _KEY.fullmatch(key):
        raise Bug(f"gate memo key {key[:80]!r} is not a SHA-256 hex digest")
    return key


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, StoreError):
        return exc.one_line()
    return str(exc)
