"""Pending timers as rows, each under the job that owns it (wave 2's first extra source).

Timers are records beside the jobs (`.specialists/owners/<owner>/timers.jsonl`, see
events/timers.py). A refresh lists the owners and folds only the files whose inode, mtime or
size changed. This source only reads: firing a due timer is the owner's front's work.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from specialists.events.owners import OWNERS_DIR, is_owner, owner_job_id
from specialists.events.timers import TIMERS_FILE, TimerStore
from specialists.fronts.fleet.rows import Row, printable

_Signature = tuple[int, int, int]


class TimerSource:
    def __init__(self, state_root: Path, *, wall_ms: Callable[[], int] | None = None) -> None:
        self.state_root = state_root
        self._wall_ms = wall_ms or (lambda: int(time.time() * 1000))
        self._seen: dict[str, tuple[_Signature, list[Row]]] = {}

    def rows(self) -> Iterable[Row]:
        return (row for _, rows in self._seen.values() for row in rows)

    def refresh(self) -> bool:
        owners_dir = self.state_root / OWNERS_DIR
        try:
            owners = [e.name for e in os.scandir(owners_dir) if is_owner(e.name)]
        except FileNotFoundError:
            owners = []
        changed = False
        for gone in set(self._seen) - set(owners):
            del self._seen[gone]
            changed = True
        for owner in owners:
            try:
                info = os.lstat(owners_dir / owner / TIMERS_FILE)
            except FileNotFoundError:
                if self._seen.pop(owner, None) is not None:
                    changed = True
                continue
            signature = (info.st_ino, info.st_mtime_ns, info.st_size)
            seen = self._seen.get(owner)
            if seen is not None and seen[0] == signature:
                continue
            rows = self._rows_of(owner)
            changed = changed or seen is None or seen[1] != rows
            self._seen[owner] = (signature, rows)
        return changed

    def _rows_of(self, owner: str) -> list[Row]:
        fold = TimerStore(self.state_root, owner).fold()  # damage is skipped, never raised
        job_id = owner_job_id(owner)
        parent = f"job:{job_id}" if job_id else None
        rows = []
        for timer in fold.pending():
            clock = time.strftime("%H:%M:%S", time.localtime(timer.due_ms / 1000))
            note = f" · {printable(timer.note)[:120]}" if timer.note else ""
            who = "" if job_id else f" · for {owner}"
            rows.append(
                Row(
                    key=f"timer:{owner}:{timer.id}",
                    kind="timer",
                    title=f"timer ({printable(timer.source.tool)[:20]})",
                    status="pending",
                    parent=parent,
                    activity=f"due {clock}{who}{note}",
                    started_at_ms=timer.created_ms,
                    finished_at_ms=timer.due_ms,
                    elapsed_s=max(0.0, (timer.due_ms - timer.created_ms) / 1000),
                )
            )
        return rows
