"""The threads of a project as rows for the CLI and the MCP server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specialists.base.errors import SpecialistsError
from specialists.features.threads.closing import settled_view
from specialists.features.threads.records import ThreadStore
from specialists.features.threads.state import Child, job_store
from specialists.features.threads.transports import supports


def thread_rows(state_root: Path) -> tuple[list[Child], list[str]]:
    """Every thread (oldest first) with its phase, and problems with damaged records."""
    threads, jobs = ThreadStore(state_root), job_store(state_root)
    records, problems = threads.all()
    rows = [settled_view(threads, jobs, r) for r in records]
    problems += [f"thread {c.record.id}: {c.problem}" for c in rows if c.problem]
    return rows, problems


MAX_LISTED = 100  # threads in one MCP status answer (the model's context is precious)


def rows_of(state_root: Path, owners: set[str]) -> tuple[list[Child], list[str]]:
    """The threads of one caller: its children and theirs (any depth), and the children of
    the jobs it owns (a workflow's children are threads of the workflow's job), oldest first,
    at most MAX_LISTED (the newest ones)."""
    rows, problems = thread_rows(state_root)
    jobs = job_store(state_root)
    mine: set[str] = set()
    owned: dict[str, bool] = {}  # parent key job-<id> -> that job is the caller's

    def caller_owns(parent: str) -> bool:
        if parent not in owned:
            owned[parent] = False
            if parent.startswith("job-"):
                try:
                    owner = jobs.read_record(parent[len("job-") :]).owner
                except (SpecialistsError, OSError):
                    owner = []  # a job gone or damaged: its threads are not the caller's
                owned[parent] = bool(owners & set(owner))
        return owned[parent]

    out = []
    for c in rows:  # oldest first: a parent thread comes before its children
        r = c.record
        if r.parent in owners or r.parent_thread in mine or caller_owns(r.parent):
            mine.add(r.id)
            owned[f"job-{r.job_id}"] = True  # what its job starts is the caller's too
            out.append(c)
    return out[-MAX_LISTED:], problems


def threads_of(state_root: Path, owners: set[str]) -> dict[str, Any]:
    """`rows_of` as compact rows, for the MCP server's `status {threads: true}`, with the
    first few problems of damaged records."""
    rows, problems = rows_of(state_root, owners)
    out: dict[str, Any] = {"threads": [compact_row(c) for c in rows]}
    if problems:
        out["thread_problems"] = [p[:300] for p in problems[:5]]
    return out


_COMPACT = ("id", "job_id", "parent", "phase", "failed", "runner", "transport", "sandbox")


def compact_row(child: Child) -> dict[str, Any]:
    """A row for the model: what it needs to act on a child, nothing more."""
    r = child.record
    row = {k: v for k, v in row_dict(child).items() if k in _COMPACT}
    row["parent"] = r.parent if r.parent_thread == "root" else r.parent_thread
    return row | {"instructions": r.instructions[:80]}


def row_dict(child: Child) -> dict[str, Any]:
    r = child.record
    return {
        "id": r.id,
        "job_id": r.job_id,
        "parent": r.parent,
        "stack": list(r.stack),
        "phase": child.phase,
        "failed": child.failed,
        "status": child.status.status if child.status else None,
        "runner": r.runner,
        "transport": supports(r.runner),
        "fresh_context": r.fresh_context,
        "sandbox": r.sandbox,
        "created_at_ms": r.created_at_ms,
        "instructions": r.instructions[:200],
    }


def tree_order(rows: list[Child]) -> list[tuple[int, Child]]:
    """(depth below its parent session, row), each child right under its parent thread."""
    by_parent: dict[str, list[Child]] = {}
    ids = {c.record.id for c in rows}
    tops: list[Child] = []
    for c in rows:
        parent = c.record.parent_thread
        if parent in ids:
            by_parent.setdefault(parent, []).append(c)
        else:
            tops.append(c)
    out: list[tuple[int, Child]] = []

    def walk(c: Child, depth: int) -> None:
        out.append((depth, c))
        for k in by_parent.get(c.record.id, []):
            walk(k, depth + 1)

    for c in tops:
        walk(c, 0)
    return out
