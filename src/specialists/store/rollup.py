"""What a job spent, alone and with the children it started: one shape for every reader.

    {"tokens": {"input": n, "output": n, "cache_read": n, "cache_write": n},
     "cost_usd": x, "jobs": n}

A workflow's children report to it: its engine adds up what each child spent (live while the
child runs, a nested workflow with its own children) and the workflow's supervisor keeps
the sum in status.json (`progress.children`). `rollup(status)` is the job's own spending
plus that, so `status --json`, `top`, `web` and `mission show` show the same figures
without reading every child's file. Standard library only: `status` imports it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from specialists.store.records import JobStatus

TYPE_CHECKING = False  # no `typing` at run time: `status --json` imports this
if TYPE_CHECKING:
    from typing import Any

    Spent = dict[str, Any]


TOKEN_KINDS = ("input", "output", "cache_read", "cache_write")


def nothing() -> Spent:
    return {"tokens": dict.fromkeys(TOKEN_KINDS, 0), "cost_usd": 0.0, "jobs": 0}


def own(st: JobStatus) -> Spent:
    """The job's own tokens and cost, as its status records them."""
    tokens = st.tokens if isinstance(st.tokens, Mapping) else {}
    cost = st.cost_usd if _number(st.cost_usd) else 0.0
    return {
        "tokens": {k: _count(tokens.get(k)) for k in TOKEN_KINDS},
        "cost_usd": float(cost),
        "jobs": 1,
    }


def total(parts: Iterable[Spent]) -> Spent:
    out = nothing()
    for part in parts:
        for k in TOKEN_KINDS:
            out["tokens"][k] += part["tokens"][k]
        out["cost_usd"] += part["cost_usd"]
        out["jobs"] += part["jobs"]
    out["cost_usd"] = round(out["cost_usd"], 6)
    return out


def each_once(jobs: Iterable[tuple[str, str | None, Spent | None]]) -> Spent:
    """What a set of jobs spent, given as (job id, parent id, its rollup): each job counted
    once, so a job below a workflow of the set (one whose rollup holds its children's) is
    left to that workflow's figures. A mission's spending (mission show, web)."""
    listed = list(jobs)
    rolled_up = {job for job, _, spent in listed if spent is not None and spent["jobs"] > 1}
    return total(spent for _, parent, spent in listed if spent and parent not in rolled_up)


def children(st: JobStatus) -> Spent | None:
    """What the job's children spent, as its status reports it (None: no children)."""
    progress = st.progress if isinstance(st.progress, Mapping) else {}
    return checked(progress.get("children"))


def rollup(st: JobStatus) -> Spent:
    """The job's own spending and its children's."""
    below = children(st)
    return total([own(st), below]) if below is not None else own(st)


def checked(value: object) -> Spent | None:
    """`value` as a Spent when it has the shape (a status file is untrusted input)."""
    if not isinstance(value, Mapping):
        return None
    tokens, cost, jobs = value.get("tokens"), value.get("cost_usd"), value.get("jobs")
    if not isinstance(tokens, Mapping) or not _number(cost) or not _whole(jobs):
        return None
    if not all(_whole(tokens.get(k, 0)) for k in TOKEN_KINDS):
        return None
    return {
        "tokens": {k: int(tokens.get(k, 0)) for k in TOKEN_KINDS},
        "cost_usd": float(cost),  # type: ignore[arg-type]
        "jobs": int(jobs),  # type: ignore[arg-type]
    }


def tokens_in(spent: Spent) -> int:
    """Prompt tokens, cache reads and writes included (the views' `in`)."""
    t = spent["tokens"]
    return int(t["input"] + t["cache_read"] + t["cache_write"])


def _count(value: Any) -> int:
    return int(value) if _whole(value) else 0


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _number(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )
