"""An ask on disk: `jobs/<id>/asks/<n>/`, a Record (kinds.py ASK) made whole by an exclusive
create that takes its number, with `ask.json` and the claim `outcome.json`.

Of two replies (or a reply and the child's timeout) exactly one claim wins, and nobody ever
reads half of one. Files are never followed through a link and must be regular files of
bounded size: a planted FIFO cannot hang a reader.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from specialists.base.errors import StoreError
from specialists.features.asks.model import (
    MAX_ASKS_PER_JOB,
    Ask,
    AskOutcome,
)
from specialists.store.file_record import FileRecord
from specialists.store.kinds import ASK
from specialists.store.record import Record

ASKS_DIR = "asks"


def asks_dir(job_dir: Path) -> Path:
    return job_dir / ASKS_DIR


def _asks(job_dir: Path) -> FileRecord:
    # Opened from the job's directory, so a job directory planted as a link (a reply names
    # any job id) is not followed either: the store lists no such job (JobStore.list_ids).
    return ASK.record(job_dir).sub(ASKS_DIR)


def _ask(job_dir: Path, seq: int) -> FileRecord:
    """The ask's record; FileNotFoundError if there is no such ask."""
    rec = _asks(job_dir).sub(str(seq))
    if not rec.exists():
        raise FileNotFoundError(f"no ask {seq} of job {job_dir.name}")
    return rec


def create(job_dir: Path, make: Callable[[int], Ask]) -> Ask:
    """Take the next ask number (an exclusive create) and write the ask there."""
    root = _asks(job_dir)
    root.ensure()  # refuses an asks/ that is a link out of the store
    seq = 1 + max(_numbers(root.children()), default=0)
    while seq <= MAX_ASKS_PER_JOB:
        ask = make(seq)

        def fill(new: Record, ask: Ask = ask) -> None:
            new.replace("ask", ask.to_dict())

        if root.sub(str(seq)).create(fill):
            return ask
        seq += 1
    raise StoreError(f"{root.path}: {MAX_ASKS_PER_JOB:,} asks already; no more for this job")


def read_ask(job_dir: Path, seq: int) -> Ask:
    where = f"ask {seq} of job {job_dir.name}"
    data = _ask(job_dir, seq).read("ask")
    if data is None:
        raise FileNotFoundError(f"{where}: ask.json is missing")
    return Ask.from_dict(data, source=f"{where} is damaged")


def read_outcome(job_dir: Path, seq: int) -> AskOutcome | None:
    """How the ask ended, or None while it is open."""
    data = _ask(job_dir, seq).read("outcome")
    where = f"ask {seq} of job {job_dir.name} is damaged"
    return None if data is None else AskOutcome.from_dict(data, source=where)


def claim(job_dir: Path, seq: int, outcome: AskOutcome) -> tuple[bool, AskOutcome]:
    """Settle the ask with `outcome` unless it is settled already.

    Returns (True, outcome) when this call won, else (False, the outcome that did).
    """
    if _ask(job_dir, seq).claim("outcome", outcome.to_dict()):
        return True, outcome
    settled = read_outcome(job_dir, seq)
    if settled is None:  # removed between the claim and the read: not ours to explain
        raise StoreError(f"ask {seq} of job {job_dir.name}: outcome.json vanished while read")
    return False, settled


def list_seqs(job_dir: Path) -> list[int]:
    """The ask numbers of a job, oldest first ([] when it never asked)."""
    return sorted(_numbers(_asks(job_dir).children()))


def _numbers(names: list[str]) -> list[int]:
    """The ask numbers among directory entries (ASCII digits only: '²'.isdigit() is True)."""
    return [
        int(n)
        for n in names
        if n.isascii() and n.isdigit() and len(n) <= 5 and 0 < int(n) <= MAX_ASKS_PER_JOB
    ]
