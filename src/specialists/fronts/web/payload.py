"""The fleet as JSON for the pages: a full snapshot, then per-connection diffs.

A browser keeps rows by key; each diff carries the rows that changed, the keys that went
and, only when the tree's shape changed, the new order. With 1,000 jobs and a few active a
diff is a few hundred bytes, not the whole fleet again.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from specialists.fronts.fleet.model import Fleet
from specialists.fronts.fleet.rows import Row


def order_of(fleet: Fleet) -> list[list[Any]]:
    return [[line.row.key, line.depth, line.prefix] for line in fleet.tree()]


def snapshot(fleet: Fleet, now_ms: int) -> dict[str, Any]:
    return {
        "now_ms": now_ms,
        "version": fleet.version,
        "order": order_of(fleet),
        "upsert": [row.to_json() for row in fleet.rows.values()],
        "remove": [],
        "totals": asdict(fleet.totals()),
    }


class FleetDiff:
    """What one connection has been sent, and what it is missing."""

    def __init__(self) -> None:
        self._sent: dict[str, Row] = {}
        self._order: list[list[Any]] | None = None
        self._version = -1

    def next(self, fleet: Fleet, now_ms: int) -> dict[str, Any] | None:
        """The changes since the last call, or None when there are none."""
        if fleet.version == self._version:
            return None
        self._version = fleet.version
        upsert = [row for key, row in fleet.rows.items() if self._sent.get(key) != row]
        remove = [key for key in self._sent if key not in fleet.rows]
        order = order_of(fleet)
        changed_order = order != self._order
        if not upsert and not remove and not changed_order:
            return None
        for row in upsert:
            self._sent[row.key] = row
        for key in remove:
            del self._sent[key]
        self._order = order
        return {
            "now_ms": now_ms,
            "version": fleet.version,
            "order": order if changed_order else None,
            "upsert": [row.to_json() for row in upsert],
            "remove": remove,
            "totals": asdict(fleet.totals()),
        }
