"""The job store as a row source, read incrementally.

A refresh lists the job directories (one scandir) and stats only the status files of jobs
not yet seen finished: a finished job never changes again (only gc removes it), so its row
is kept and its file never touched again. A status file is re-read only when its inode,
mtime or size changed, and every `health_every_s` each active job is re-read anyway and its
supervisor checked: a dead one is recorded by crash recovery as every reader does.

Each file is treated as hostile: a symlink, a FIFO, a huge file or a field of the wrong type
makes a "damaged" row naming the problem, and every other job still renders.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Callable, Iterable
from typing import Any

from specialists.base.errors import StoreError
from specialists.fronts.fleet.rows import Row, printable
from specialists.store import rollup
from specialists.store.files import parse_object, read_bytes
from specialists.store.jobs import STATUS_FILE, JobStore
from specialists.store.records import TERMINAL_STATES, JobStatus
from specialists.store.recovery import recover_if_dead
from specialists.store.view import current_status, doing

HEALTH_EVERY_S = 2.0
MAX_STATUS_BYTES = 1 << 20  # a status file is a few hundred bytes; past this it is damaged
ACTIVITY_CHARS = 300
TASK_CHARS = 120

_Signature = tuple[int, int, int]  # inode, mtime_ns, size: temp+rename changes the inode


class _Entry:
    __slots__ = ("final", "row", "signature", "status")

    def __init__(
        self, signature: _Signature | None, row: Row, status: JobStatus | None, final: bool
    ) -> None:
        self.signature = signature
        self.row = row
        self.status = status
        self.final = final


class JobSource:
    """Rows for every job directory in the store; see the module docstring for the rules."""

    def __init__(
        self,
        store: JobStore,
        *,
        clock: Callable[[], float] = time.monotonic,
        health_every_s: float = HEALTH_EVERY_S,
    ) -> None:
        self.store = store
        self._clock = clock
        self._health_every_s = health_every_s
        self._last_health: float | None = None
        self._entries: dict[str, _Entry] = {}
        self.reads = 0  # status files parsed, for tests and benchmarks

    def rows(self) -> Iterable[Row]:
        return (entry.row for entry in self._entries.values())

    def refresh(self) -> bool:
        ids = self.store.list_ids()
        changed = False
        present = set(ids)
        for gone in [job_id for job_id in self._entries if job_id not in present]:
            del self._entries[gone]  # gc removed it
            changed = True
        now = self._clock()
        health = self._last_health is None or now - self._last_health >= self._health_every_s
        if health:
            self._last_health = now
        for job_id in ids:
            entry = self._entries.get(job_id)
            if entry is not None and entry.final:
                continue
            fresh = self._update(job_id, entry, health)
            if fresh is not None:
                self._entries[job_id] = fresh
                changed = changed or entry is None or entry.row != fresh.row
        return changed

    def _update(self, job_id: str, entry: _Entry | None, health: bool) -> _Entry | None:
        path = os.path.join(self.store.jobs_dir, job_id, STATUS_FILE)
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return self._unstarted(job_id, entry, health)
        except OSError as exc:
            return _Entry(None, damaged_row(job_id, _os_reason(exc)), None, False)
        signature: _Signature | None = (info.st_ino, info.st_mtime_ns, info.st_size)
        if entry is not None and entry.signature == signature and not health:
            return None
        if not stat.S_ISREG(info.st_mode):
            what = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a regular file"
            return _Entry(signature, damaged_row(job_id, f"status.json is {what}"), None, False)
        try:
            status = self._read(path)  # fields checked (JobStatus) before recovery acts on any
        except _Damaged as exc:
            return _Entry(signature, damaged_row(job_id, str(exc)), None, False)
        if status.active and health:
            try:
                recovered = recover_if_dead(self.store, job_id, status)
            except (StoreError, OSError, TypeError, ValueError) as exc:
                reason = f"cannot check its supervisor: {exc}"
                return _Entry(signature, damaged_row(job_id, reason), None, False)
            if recovered is not status:
                # Recovery rewrote the file: show what it wrote, read it afresh next time.
                return self._entry_of(job_id, None, recovered)
        return self._entry_of(job_id, signature, status)

    def _read(self, path: str) -> JobStatus:
        self.reads += 1
        try:  # the store's reader: no link followed, no FIFO opened, bounded
            data = parse_object(read_bytes(path, MAX_STATUS_BYTES, label=STATUS_FILE), STATUS_FILE)
            return JobStatus.from_dict(data)
        except StoreError as exc:
            raise _Damaged(exc.message) from exc
        except OSError as exc:
            raise _Damaged(_os_reason(exc)) from exc

    def _entry_of(self, job_id: str, signature: _Signature | None, status: JobStatus) -> _Entry:
        row = job_row(job_id, status)
        return _Entry(signature, row, status, row.status in TERMINAL_STATES)

    def _unstarted(self, job_id: str, entry: _Entry | None, health: bool) -> _Entry | None:
        """No status.json yet: being created, or abandoned by a launcher that died."""
        if entry is not None and not health:
            return None
        if entry is None and not health:
            status = JobStatus(id=job_id, specialist="?")
        else:
            try:
                status = current_status(self.store, job_id)
            except (StoreError, OSError) as exc:
                return _Entry(None, damaged_row(job_id, str(exc)), None, False)
        fresh = self._entry_of(job_id, None, status)
        fresh.final = False  # it may still be created, or its status file may yet appear
        return fresh


class _Damaged(Exception):
    """A status file that cannot be shown as a job; the message says why."""


def job_row(job_id: str, st: JobStatus) -> Row:
    """The row of one job (its fields were checked when it was read: JobStatus.from_dict)."""
    tokens = st.tokens
    parent = st.parent_id
    return Row(
        key=f"job:{job_id}",
        kind="job",
        job_id=job_id,
        title=printable(st.specialist)[:80],
        status=st.status,
        parent=f"job:{parent}" if parent and parent != job_id else None,
        activity=_activity(st),
        started_at_ms=st.started_at_ms,
        finished_at_ms=st.finished_at_ms or None,
        elapsed_s=float(st.elapsed_s),
        tokens_in=sum(tokens.get(k, 0) for k in ("input", "cache_read", "cache_write")),
        tokens_out=tokens.get("output", 0),
        cost_usd=float(st.cost_usd),
        attention=printable(st.needs_attention or "")[:200] or None,
        stalled=st.stalled,
        keep_alive=st.keep_alive,
        model=printable(st.model or "")[:80] or None,
        runner=printable(st.runner or "")[:40] or None,
        workflow_key=printable(st.workflow_key or "")[:80] or None,
        task=printable(st.title or "")[:TASK_CHARS],
        progress=_progress(st),
        rollup=rollup.rollup(st) if rollup.children(st) is not None else None,
        ceiling=_ceiling(st),
    )


def _ceiling(st: JobStatus) -> dict[str, Any] | None:
    """The ceiling nearest its limit, with how much of it is used (`used`: 0.8 = 80%) and
    what is left, in words."""
    from specialists.features.spend.ceiling import entries, tightest

    top = tightest(entries(st.ceilings))
    if top is None:
        return None
    return {**top.to_dict(), "used": round(top.used(), 3), "whose": top.whose(), "left": top.left()}


def damaged_row(job_id: str, reason: str) -> Row:
    return Row(
        key=f"job:{job_id}",
        kind="damaged",
        job_id=job_id,
        title="?",
        status="damaged",
        activity=printable(reason)[:ACTIVITY_CHARS],
    )


def _activity(st: JobStatus) -> str:
    """What the job is doing, in words (store/view.py `doing`); a failed job's error."""
    failed = st.status in ("error", "cancelled")
    text = (st.error or st.status) if failed else doing(st)
    return printable(text)[:ACTIVITY_CHARS]


def _progress(st: JobStatus) -> dict[str, Any] | None:
    """A workflow's counts as the views show them (numbers and the phase only)."""
    p = st.progress
    if not isinstance(p, dict) or not p:
        return None
    out: dict[str, Any] = {
        k: p[k]
        for k in ("total", "done", "failed", "running", "queued", "concurrency")
        if isinstance(p.get(k), int) and not isinstance(p.get(k), bool)
    }
    phase = p.get("phase")
    out["phase"] = printable(phase)[:80] if isinstance(phase, str) else None
    return out


def _os_reason(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "status.json is a symbolic link"
    return f"status.json cannot be read: {exc.strerror or exc}"
