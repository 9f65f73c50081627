"""Start keys: which job a keyed start made, claimed once (supervise/start.py).

    .specialists/keys/<sha256 of the key, 32 hex>.json
        {"key": "schedule:nightly:1764550800000", "job": "3fa4c2d1", "at_ms": ...}

A key names a start its caller makes at most once: a schedule's slot, a workflow child's
attempt, a watchdog's review round, the resume of a workflow run, the continuation of a
session. Its claim is a Record document created once (record.py `claim`), and the job it
names exists before the claim is made, so a claim never names a job that was never made.

A claim is free again when `free(job)` says so (its job is gone: collected, or removed by a
start that failed; for a session, also ended): `claim` then replaces it under the record's
lock and names the job it took over. A damaged claim (not JSON, a planted FIFO or symlink)
is free too: it is replaced, never followed. gc removes a claim with its job.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from specialists.base.errors import StoreError
from specialists.store.file_record import FileRecord
from specialists.store.ids import is_job_id
from specialists.store.jobs import now_ms
from specialists.store.kinds import START_KEYS

KEYS_DIR = "keys"
MAX_KEY = 1024


def _record(state_root: Path) -> FileRecord:
    return START_KEYS.record(state_root / KEYS_DIR)


def _doc(key: str) -> str:
    import hashlib  # not at import: gc imports this module on every run start

    if not key or len(key) > MAX_KEY:
        raise StoreError(f"bug: a start key of {len(key)} characters")
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _read(record: FileRecord, doc: str) -> str | None:
    try:
        data = record.read(doc)
    except (StoreError, OSError):
        return None  # damaged: free, and replaced by the next claim
    job = data.get("job") if data is not None else None
    return job if isinstance(job, str) and is_job_id(job) else None


def holder(state_root: Path, key: str) -> str | None:
    """The job `key` was claimed for, or None (never claimed, released, or damaged)."""
    return _read(_record(state_root), _doc(key))


def claim(state_root: Path, key: str, job_id: str, free: Callable[[str], bool]) -> str:
    """Claim `key` for `job_id`. Returns the job that holds it now: `job_id`, or the one
    that held it before and is not `free`."""
    record, doc = _record(state_root), _doc(key)
    entry: dict[str, object] = {"key": key, "job": job_id, "at_ms": now_ms()}
    if record.claim(doc, entry):
        return job_id
    with record.locked():  # taken over by one start at a time
        old = _read(record, doc)
        if old is not None and old != job_id and not free(old):
            return old
        if old is not None and old != job_id:
            entry["took_over"] = old
        record.replace(doc, entry)
    return job_id


def release(state_root: Path, key: str, job_id: str) -> None:
    """Remove the claim if it still names `job_id` (its start failed, or its job is gone)."""
    record, doc = _record(state_root), _doc(key)
    if not record.exists():
        return
    with record.locked():
        if _read(record, doc) == job_id:
            record.remove(doc)


def read(state_root: Path, key: str) -> dict[str, object] | None:
    """The claim of `key` as written (key, job, at_ms, took_over), or None."""
    try:
        return _record(state_root).read(_doc(key))
    except (StoreError, OSError):
        return None  # damaged: as good as none
