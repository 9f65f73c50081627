"""A cache of finished jobs, so `status` over 1,000 jobs does not parse 1,000 files.

A finished job never changes again (only gc deletes it), so its summary can be kept in one
file, `.specialists/jobs/.finished.json`. Any reader may rebuild or extend it: it is derived
from the status files, written atomically, and a missing or damaged index only costs time.
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any, NamedTuple

from specialists.jobs.atomic import write_atomic
from specialists.jobs.records import JobStatus
from specialists.jobs.store import JobStore

INDEX_NAME = ".finished.json"
INDEX_VERSION = 1


class Finished(NamedTuple):
    id: str
    status: str
    specialist: str
    started_at_ms: int
    elapsed_s: float
    error: str | None

    @classmethod
    def of(cls, st: JobStatus) -> Finished:
        error = st.error[:200] if st.error else None
        return cls(st.id, st.status, st.specialist, st.started_at_ms, st.elapsed_s, error)


def load(store: JobStore) -> dict[str, Finished]:
    try:
        with open(os.path.join(store.jobs_dir, INDEX_NAME), "rb") as f:
            data = json.loads(f.read())
        if data.get("v") != INDEX_VERSION:
            return {}
        return {row[0]: Finished(*row) for row in data["jobs"]}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}  # absent or damaged: rebuilt from the status files by the caller


def save(store: JobStore, entries: dict[str, Finished]) -> None:
    payload: dict[str, Any] = {"v": INDEX_VERSION, "jobs": [list(e) for e in entries.values()]}
    # Best effort: the index is a cache, and a read-only store must still show its jobs.
    with contextlib.suppress(OSError):
        write_atomic(store.jobs_dir / INDEX_NAME, json.dumps(payload).encode())
