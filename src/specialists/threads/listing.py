"""The threads of a project as rows for the CLI and the MCP server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specialists.threads.records import ThreadStore
from specialists.threads.state import Child, job_store
from specialists.threads.transports import supports
from specialists.threads.watch import settled_view


def thread_rows(state_root: Path) -> tuple[list[Child], list[str]]:
    """Every thread (oldest first) with its phase, and problems with damaged records."""
    threads, jobs = ThreadStore(state_root), job_store(state_root)
    records, problems = threads.all()
    rows = [settled_view(threads, jobs, r) for r in records]
    problems += [f"thread {c.record.id}: {c.problem}" for c in rows if c.problem]
    return rows, problems


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
