"""A workflow run's progress, as status.json carries it for every view.

    {"total": 8, "done": 3, "failed": 0, "running": 2, "queued": 3,
     "phase": "review", "concurrency": 4, "children": <store/rollup.py shape>}

Counted by key (a key retried after a schema miss is still one key): `queued` keys wait for
a concurrency slot, `running` ones hold one (or are adopted from an earlier run), `done`
and `failed` ended. `total` is every key the script has asked for so far plus the pipeline
stages its items have not reached yet: a Python script decides as it goes, so the total can
grow, never silently shrink past what was counted. `children` is what the child jobs spent,
live while they run.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from specialists.store import rollup

KeyState = Literal["queued", "running", "done", "failed"]


class Tally:
    def __init__(self, concurrency: int) -> None:
        self.concurrency = concurrency
        self.phase: str | None = None
        self.lookahead = 0  # pipeline stages not reached yet
        self._keys: dict[str, KeyState] = {}
        self._spent: dict[str, rollup.Spent] = {}  # child job -> what it spent

    def key(self, key: str, state: KeyState) -> None:
        self._keys[key] = state

    def spent(self, job: str, spent: rollup.Spent) -> None:
        self._spent[job] = spent

    def snapshot(self) -> dict[str, Any]:
        counts = Counter(self._keys.values())
        return {
            "total": len(self._keys) + max(0, self.lookahead),
            "done": counts["done"],
            "failed": counts["failed"],
            "running": counts["running"],
            "queued": counts["queued"],
            "phase": self.phase,
            "concurrency": self.concurrency,
            "children": rollup.total(self._spent.values()),
        }
