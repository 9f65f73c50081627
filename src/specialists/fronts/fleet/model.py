"""The fleet: rows from every source, their tree and totals, refreshed incrementally."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from specialists.fronts.fleet.jobsource import JobSource
from specialists.fronts.fleet.rows import Row, RowSource
from specialists.fronts.fleet.tree import TreeLine, build_tree
from specialists.store.jobs import JobStore


@dataclass(frozen=True, slots=True)
class Totals:
    active: int
    finished: int
    damaged: int
    timers: int
    attention: int
    tokens_in: int
    tokens_out: int
    cost_usd: float

    @classmethod
    def of(cls, rows: Sequence[Row]) -> Totals:
        return cls(
            active=sum(1 for r in rows if r.active),
            finished=sum(1 for r in rows if not r.active and r.kind == "job"),
            damaged=sum(1 for r in rows if r.kind == "damaged"),
            timers=sum(1 for r in rows if r.kind == "timer"),
            attention=sum(1 for r in rows if r.attention or (r.stalled and r.active)),
            tokens_in=sum(r.tokens_in for r in rows),
            tokens_out=sum(r.tokens_out for r in rows),
            cost_usd=round(sum(r.cost_usd for r in rows), 6),
        )


class Fleet:
    """Rows by key from all sources; the tree is rebuilt only after a change."""

    def __init__(self, sources: Sequence[RowSource]) -> None:
        self.sources = list(sources)
        self.rows: dict[str, Row] = {}
        self.version = 0  # bumped on every change, so views can tell they are behind
        self._trees: dict[bool, list[TreeLine]] = {}
        self._totals: Totals | None = None

    def refresh(self) -> bool:
        changed = False
        for source in self.sources:
            changed = source.refresh() or changed
        if changed or self.version == 0:
            rows = {row.key: row for source in self.sources for row in source.rows()}
            if rows.keys() == self.rows.keys() and all(
                _shape(rows[key]) == _shape(old) for key, old in self.rows.items()
            ):
                # Same rows in the same places (a live job's tool or tokens moved): the trees
                # keep their lines, each pointing at its row's new version.
                self._trees = {
                    which: [TreeLine(rows[ln.row.key], ln.depth, ln.prefix) for ln in lines]
                    for which, lines in self._trees.items()
                }
            else:
                self._trees.clear()
            self.rows = rows
            self.version += 1
            self._totals = None
        return changed

    def tree(self, *, active_only: bool = False) -> list[TreeLine]:
        if active_only not in self._trees:
            self._trees[active_only] = build_tree(self.rows.values(), active_only=active_only)
        return self._trees[active_only]

    def totals(self) -> Totals:
        if self._totals is None:
            self._totals = Totals.of(list(self.rows.values()))
        return self._totals

    def descendants(self, key: str) -> list[Row]:
        """`key`'s row and every row below it, by start time (a workflow and its children)."""
        if key not in self.rows:
            return []
        children: dict[str, list[Row]] = {}
        for row in self.rows.values():
            if row.parent is not None:
                children.setdefault(row.parent, []).append(row)
        found: dict[str, Row] = {}
        stack = [self.rows[key]]
        while stack:
            row = stack.pop()
            if row.key not in found:
                found[row.key] = row
                stack.extend(children.get(row.key, ()))
        return sorted(found.values(), key=lambda r: (r.started_at_ms, r.key))


def _shape(row: Row) -> tuple[object, ...]:
    """What places a row in the tree: a change here needs the tree built anew."""
    return (row.parent, row.started_at_ms, row.active, row.kind)


def job_fleet(store: JobStore, *, clock: Callable[[], float] | None = None) -> Fleet:
    """The fleet of today's store: its jobs and their pending timers (wave 2 adds here)."""
    from specialists.fronts.fleet.timersource import TimerSource

    source = JobSource(store) if clock is None else JobSource(store, clock=clock)
    return Fleet([source, TimerSource(store.root)])
