"""An ask on disk, under the asking job's directory, with the store's rules.

    jobs/<id>/asks/                 0700; a symlink or a non-directory here is refused
      <n>/                          one ask, made with an exclusive mkdir (its number)
        ask.json                    the question (written atomically, once)
        outcome.json                how it ended: claimed exactly once (below)

`outcome.json` is written to a temp file and then hard-linked into place: link(2) fails when
the name exists, so of two replies (or a reply and the child's timeout) exactly one wins,
and nobody ever reads half of one. Files are opened without following links and must be
regular files of bounded size: a planted FIFO cannot hang a reader, a symlink is not followed.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path

from specialists.base.errors import StoreError
from specialists.features.asks.model import (
    MAX_ASKS_PER_JOB,
    MAX_MESSAGE_BYTES,
    Ask,
    AskOutcome,
    ask_from_dict,
    outcome_from_dict,
)
from specialists.store.atomic import write_atomic
from specialists.store.files import FILE_MODE, ensure_dir, open_dir, parse_object, read_bytes

ASKS_DIR = "asks"
ASK_FILE = "ask.json"
OUTCOME_FILE = "outcome.json"
MAX_FILE = 2 * MAX_MESSAGE_BYTES + 8192  # a message JSON-escaped, plus the fields
_TMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def asks_dir(job_dir: Path) -> Path:
    return job_dir / ASKS_DIR


def _encode(data: dict) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def create(job_dir: Path, make: Callable[[int], Ask]) -> Ask:
    """Claim the next ask number with an exclusive mkdir and write the ask there."""
    root = asks_dir(job_dir)
    ensure_dir(root)
    fd = open_dir(root)
    try:
        seq = 1 + max(_numbers(os.listdir(fd)), default=0)
        while seq <= MAX_ASKS_PER_JOB:
            try:
                os.mkdir(str(seq), 0o700, dir_fd=fd)
            except FileExistsError:
                seq += 1
                continue
            ask = make(seq)
            sub = open_dir(str(seq), dir_fd=fd)
            try:
                write_atomic(ASK_FILE, _encode(ask.to_dict()), dir_fd=sub)
            except BaseException:
                os.close(sub)
                with contextlib.suppress(OSError):  # no half-made ask is left behind
                    os.rmdir(str(seq), dir_fd=fd)
                raise
            os.close(sub)
            return ask
    finally:
        os.close(fd)
    raise StoreError(f"{root}: {MAX_ASKS_PER_JOB:,} asks already; no more for this job")


def _ask_dir_fd(job_dir: Path, seq: int) -> int:
    """An fd on asks/<seq>/; FileNotFoundError if there is no such ask."""
    root = open_dir(asks_dir(job_dir))
    try:
        return open_dir(str(seq), dir_fd=root)
    finally:
        os.close(root)


def read_ask(job_dir: Path, seq: int) -> Ask:
    fd = _ask_dir_fd(job_dir, seq)
    try:
        where = f"ask {seq} of job {job_dir.name}"
        raw = read_bytes(ASK_FILE, MAX_FILE, dir_fd=fd, label=f"{where}: {ASK_FILE}")
        return ask_from_dict(parse_object(raw, where), where)
    finally:
        os.close(fd)


def read_outcome(job_dir: Path, seq: int) -> AskOutcome | None:
    """How the ask ended, or None while it is open."""
    fd = _ask_dir_fd(job_dir, seq)
    try:
        return _read_outcome(fd, f"ask {seq} of job {job_dir.name}")
    finally:
        os.close(fd)


def _read_outcome(fd: int, where: str) -> AskOutcome | None:
    try:
        raw = read_bytes(OUTCOME_FILE, MAX_FILE, dir_fd=fd, label=f"{where}: {OUTCOME_FILE}")
    except FileNotFoundError:
        return None
    return outcome_from_dict(parse_object(raw, where), where)


def claim(job_dir: Path, seq: int, outcome: AskOutcome) -> tuple[bool, AskOutcome]:
    """Settle the ask with `outcome` unless it is settled already.

    Returns (True, outcome) when this call won, else (False, the outcome that did).
    """
    fd = _ask_dir_fd(job_dir, seq)
    where = f"ask {seq} of job {job_dir.name}"
    tmp = f".outcome.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    try:
        tfd = os.open(tmp, _TMP_FLAGS, FILE_MODE, dir_fd=fd)
        try:
            os.write(tfd, _encode(outcome.to_dict()))
        finally:
            os.close(tfd)
        try:
            os.link(tmp, OUTCOME_FILE, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
            won = True
        except FileExistsError:
            won = False
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=fd)
        if won:
            return True, outcome
        settled = _read_outcome(fd, where)
        if settled is None:  # removed between the link and the read: not ours to explain
            raise StoreError(f"{where}: {OUTCOME_FILE} vanished while it was read")
        return False, settled
    finally:
        os.close(fd)


def list_seqs(job_dir: Path) -> list[int]:
    """The ask numbers of a job, oldest first ([] when it never asked)."""
    try:
        fd = open_dir(asks_dir(job_dir))
    except FileNotFoundError:
        return []
    try:
        return sorted(_numbers(os.listdir(fd)))
    finally:
        os.close(fd)


def _numbers(names: list[str]) -> list[int]:
    """The ask numbers among directory entries (ASCII digits only: '²'.isdigit() is True)."""
    return [
        int(n)
        for n in names
        if n.isascii() and n.isdigit() and len(n) <= 5 and 0 < int(n) <= MAX_ASKS_PER_JOB
    ]
