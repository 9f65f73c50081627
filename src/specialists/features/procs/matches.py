"""Watched lines become `job_match` events for the job's owner (R-J6, R-J7).

The batcher (watch.py) decides when a batch goes and which are held back by the rate limit;
this turns each batch into one event through an `Emitter` (which never raises into the
supervisor: a failed append is logged and the command goes on).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from specialists.events.emitter import Emitter
from specialists.features.procs.exit import event_limits
from specialists.features.procs.spec import ProcOptions
from specialists.features.procs.watch import MatchBatch


class MatchPoster:
    def __init__(self, state_root: Path, job_id: str, options: ProcOptions) -> None:
        self.job_id = job_id
        self.options = options
        self.sent = 0
        limits = event_limits(options.settings.event_max_chars)
        self._emitter = Emitter(state_root, f"bg-{job_id}", nonce=options.nonce, limits=limits)

    def post(self, batches: Iterable[MatchBatch]) -> None:
        for batch in batches:
            self.sent += 1
            self._emitter.emit(
                self.options.owner,
                "job_match",
                self.options.source,
                match_body(self.job_id, self.options, batch),
                {
                    "job_id": self.job_id,
                    "first_line": batch.first_line,
                    "last_line": batch.last_line,
                    "lines": len(batch.lines),
                },
            )


def match_body(job_id: str, options: ProcOptions, batch: MatchBatch) -> str:
    n = len(batch.lines)
    where = (
        f"line {batch.first_line}"
        if batch.first_line == batch.last_line
        else f"lines {batch.first_line}-{batch.last_line}"
    )
    head = f"job {job_id} ({options.label}): {n} matching line{'s' if n != 1 else ''} ({where})"
    return "\n".join([head, *batch.lines])
