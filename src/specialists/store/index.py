"""A cache of finished jobs, so `status` over 1,000 jobs does not parse 1,000 files.

A finished job never changes again (only gc deletes it), so its summary can be kept in one
file, `.specialists/jobs/.finished.json`. Any reader may rebuild or extend it: it is derived
from the status files, written atomically, and a missing or damaged index only costs time.
Each row is checked against the fields of `Finished` (declared once, below); a bad row is
described in `problems` and dropped, and its job is read again from its own status.json.
"""

from __future__ import annotations

import contextlib
import functools
import json
from typing import Any, NamedTuple

from specialists.base.errors import StoreError
from specialists.store.atomic import write_atomic
from specialists.store.fields import Check, describe, parse_type, row_check
from specialists.store.files import read_object
from specialists.store.jobs import JobStore
from specialists.store.records import TERMINAL_STATES, TITLE_CHARS, JobStatus

INDEX_NAME = ".finished.json"
# 2: workflow_key and title (what a row is); 3: what it spent and the ceilings it counted
# against (a fan-out's estimate, a ceiling's sum: features/spend). Another version is rebuilt.
INDEX_VERSION = 3
MAX_INDEX = 64 * 1024 * 1024  # about 400,000 rows


class Finished(NamedTuple):
    id: str
    status: str
    specialist: str
    started_at_ms: int
    elapsed_s: float
    error: str | None
    workflow_key: str | None
    title: str | None
    tokens: int  # its own input + output tokens (not its children's)
    cost_usd: float
    under: list[str]  # the ceilings it counted against (status.json `ceilings`)

    @classmethod
    def of(cls, st: JobStatus) -> Finished:
        error = st.error[:200] if st.error else None
        key = st.workflow_key[:128] if st.workflow_key else None
        title = st.title[:TITLE_CHARS] if st.title else None
        t = st.tokens
        tokens = sum(n for k in ("input", "output") if type(n := t.get(k)) is int and n > 0)
        under = [c["of"] for c in st.ceilings if type(c) is dict and type(c.get("of")) is str]
        return cls(
            st.id,
            st.status,
            st.specialist,
            st.started_at_ms,
            st.elapsed_s,
            error,
            key,
            title,
            tokens,
            float(st.cost_usd),
            under[:8],
        )


# NamedTuple keeps each annotation as a ForwardRef: its text is the declared type.
_TYPES = [getattr(hint, "__forward_arg__", str(hint)) for hint in Finished.__annotations__.values()]


@functools.cache
def _row_ok() -> Check:
    """One call checks a row (compiled on first use, not at import)."""
    return row_check(_TYPES)


def _row_problem(row: Any) -> str:
    """What is wrong with a row that failed the fast check. (A row whose id names no job
    directory is dropped by the reader, as for a job gc removed.)"""
    if type(row) is not list or len(row) != len(_TYPES):
        return f"a row should be a list of {len(_TYPES)} values, not {describe(row)}"
    for name, text, value in zip(Finished._fields, _TYPES, row, strict=True):
        check, expected = parse_type(text)
        if not check(value):
            return f"field {name!r} should be {expected}, not {describe(value)}"
    return f"field 'status' should be done, error or cancelled, not {describe(row[1])}"


def load(store: JobStore, problems: list[str] | None = None) -> dict[str, Finished]:
    path = store.jobs_dir / INDEX_NAME
    try:
        data = read_object(path, MAX_INDEX)
    except FileNotFoundError:
        return {}
    except (StoreError, OSError) as exc:
        _note(problems, f"{exc}; rebuilt from the status files")
        return {}
    if data.get("v") != INDEX_VERSION or type(data.get("jobs")) is not list:
        return {}  # another version's cache: rebuilt by the caller
    out: dict[str, Finished] = {}
    ok, make = _row_ok(), Finished._make
    for number, row in enumerate(data["jobs"]):
        if ok(row) and row[1] in TERMINAL_STATES:
            out[row[0]] = make(row)
        else:
            problem = _row_problem(row)
            _note(problems, f"{path}: row {number}: {problem}; read again from its status.json")
    return out


def _note(problems: list[str] | None, text: str) -> None:
    if problems is not None:
        problems.append(text)


def save(store: JobStore, entries: dict[str, Finished]) -> None:
    payload: dict[str, Any] = {"v": INDEX_VERSION, "jobs": [list(e) for e in entries.values()]}
    # Best effort: the index is a cache, and a read-only store must still show its jobs.
    with contextlib.suppress(OSError):
        write_atomic(store.jobs_dir / INDEX_NAME, json.dumps(payload).encode(), displace_dir=True)
