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
import os
from collections import namedtuple
from itertools import chain

from specialists.base.errors import StoreError
from specialists.store.atomic import write_atomic
from specialists.store.fields import (
    FLOAT_LIMIT,
    INT_LIMIT,
    compile_function,
    describe,
    parse_type,
    type_expression,
)
from specialists.store.files import read_object
from specialists.store.jobs import JobStore
from specialists.store.records import TERMINAL_STATES, TITLE_CHARS, JobStatus

TYPE_CHECKING = False  # no `typing` at run time: `status` reads this
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

INDEX_NAME = ".finished.json"
# 2: workflow_key and title (what a row is); 3: what it spent and the ceilings it counted
# against (a fan-out's estimate, a ceiling's sum: features/spend). Another version is rebuilt.
INDEX_VERSION = 3
MAX_INDEX = 64 * 1024 * 1024  # about 400,000 rows

_Row = namedtuple(  # not typing.NamedTuple: `typing` costs `status` milliseconds
    "_Row",
    "id status specialist started_at_ms elapsed_s error workflow_key title tokens cost_usd under",
)
# Each field's type, in order: `tokens` is its own input + output tokens (not its children's),
# `under` the ceilings it counted against (status.json `ceilings`).
TYPES: tuple[str, ...] = ("str", "str", "str", "int", "float", "str | None", "str | None")
TYPES += ("str | None", "int", "float", "list[str]")


class Finished(_Row):
    """A finished job's row, as the index holds it and the views show it."""

    __slots__ = ()

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


def _all_fine(rows: list[Any]) -> bool:
    """True when every row surely holds a finished job: checked column by column in C
    (set, map, zip, min, max; no Python call per row, no code compiled). False (a doubt,
    not a verdict: an int where a float is declared, say) sends the rows through the exact
    check below, which names what is wrong with each."""
    if set(map(type, rows)) != {list} or set(map(len, rows)) != {len(TYPES)}:
        return False
    columns = list(zip(*rows, strict=True))
    for text, column in zip(TYPES, columns, strict=True):
        kinds = set(map(type, column))
        if text in ("str", "str | None"):
            fine = kinds <= ({str} if text == "str" else {str, type(None)})
        elif text == "int":  # bool is not int here: type(True) is bool
            fine = kinds == {int} and min(column) >= -INT_LIMIT and max(column) < INT_LIMIT
        elif text == "float" and kinds == {float}:
            total = sum(column)  # NaN anywhere makes it NaN; then min and max are sound
            fine = total == total and min(column) > -FLOAT_LIMIT and max(column) < FLOAT_LIMIT
        elif text == "list[str]":
            fine = kinds == {list} and set(map(type, chain.from_iterable(column))) <= {str}
        else:
            fine = False
        if not fine:
            return False
    return set(columns[1]) <= TERMINAL_STATES


@functools.cache
def _bad_rows() -> Callable[[list[Any]], list[int]]:
    """One call finds the rows that are not a finished job's (compiled on first use, not at
    import): every row is checked by one expression, with no call per row."""
    parts = [f"type(row) is list and len(row) == {len(TYPES)}"]
    parts += [type_expression(t, f"row[{i}]")[0] for i, t in enumerate(TYPES)]
    parts.append("row[1] in T")
    check = " and ".join(parts)
    source = f"def bad(rows):\n    return [n for n, row in enumerate(rows) if not ({check})]\n"
    return compile_function(source, "bad", T=TERMINAL_STATES)


def _row_problem(row: Any) -> str:
    """What is wrong with a row the check refused. (A row whose id names no job directory
    is dropped by the reader, as for a job gc removed.)"""
    if type(row) is not list or len(row) != len(TYPES):
        return f"a row should be a list of {len(TYPES)} values, not {describe(row)}"
    for name, text, value in zip(Finished._fields, TYPES, row, strict=True):
        check, expected = parse_type(text)
        if not check(value):
            return f"field {name!r} should be {expected}, not {describe(value)}"
    return f"field 'status' should be done, error or cancelled, not {describe(row[1])}"


def load(store: JobStore, problems: list[str] | None = None) -> dict[str, Finished]:
    path = os.path.join(store.jobs_str, INDEX_NAME)
    try:
        data = read_object(path, MAX_INDEX)
    except FileNotFoundError:
        return {}
    except (StoreError, OSError) as exc:
        _note(problems, f"{exc}; rebuilt from the status files")
        return {}
    rows = data.get("jobs")
    if data.get("v") != INDEX_VERSION or type(rows) is not list:
        return {}  # another version's cache: rebuilt by the caller
    bad = [] if _all_fine(rows) else _bad_rows()(rows)
    for number in bad:
        problem = _row_problem(rows[number])
        _note(problems, f"{path}: row {number}: {problem}; read again from its status.json")
    if bad:
        refused = set(bad)
        rows = [row for n, row in enumerate(rows) if n not in refused]
    make = Finished._make
    return {row[0]: make(row) for row in rows}


def _note(problems: list[str] | None, text: str) -> None:
    if problems is not None:
        problems.append(text)


def save(store: JobStore, entries: dict[str, Finished]) -> None:
    payload: dict[str, Any] = {"v": INDEX_VERSION, "jobs": [list(e) for e in entries.values()]}
    # Best effort: the index is a cache, and a read-only store must still show its jobs.
    with contextlib.suppress(OSError):
        write_atomic(
            os.path.join(store.jobs_str, INDEX_NAME),
            json.dumps(payload).encode(),
            displace_dir=True,
        )
