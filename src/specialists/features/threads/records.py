"""The thread registry: who spawned which child job, and how far its close has come.
`.specialists/threads/<thread id>/` is a Record (kinds.py THREAD; the threads directory
itself is THREADS), made by an exclusive create that takes the id.

Thread ids are `t-` and 32 lowercase hex digits: 128 random bits, so ids never collide
across sessions or processes without any shared allocation state (R-H0). The root is `root`.
A thread's stack is the list of ids from root to itself.

Writers: the spawner writes thread.json; the child (its tools) appends reports and makes
closing.json; whoever finishes the close first (the child's close_thread, or the runtime
when the job ended without one, R-S9) makes closed.json. Both markers are claims
(Record.claim), so exactly one close happens however many try.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from specialists.base.errors import StoreError, UserError
from specialists.store.fields import EMPTY, Declared
from specialists.store.files import read_bytes
from specialists.store.kinds import THREAD
from specialists.store.record import Record

THREADS_DIR = "threads"
ROOT = "root"
MAX_DEPTH = 4  # R-H9: a thread this deep may not spawn
MAX_FAILURES = 10_000  # failed launches kept per parent (a longer journal is trimmed)
_THREAD_ID = re.compile(r"t-[0-9a-f]{32}")


def new_thread_id() -> str:
    return "t-" + os.urandom(16).hex()


def is_thread_id(text: object) -> bool:
    return isinstance(text, str) and _THREAD_ID.fullmatch(text) is not None


def check_thread_id(text: object) -> str:
    if not is_thread_id(text):
        shown = text[:60] if isinstance(text, str) else type(text).__name__
        raise UserError(
            f"unknown thread id {shown!r}",
            hint="thread ids are t- and 32 hex digits; `specialists threads` lists them",
        )
    assert isinstance(text, str)
    return text


class ThreadRecord(Declared):
    """thread.json: written once by the spawner; read field by field (the registry is files
    anyone in the project can write)."""

    _what = "thread record"
    id: str
    parent: str  # owner key of the parent: job-<id> or an outside session
    stack: list[str]  # root .. this thread
    job_id: str
    instructions: str
    fresh_context: bool
    runner: str
    created_at_ms: int
    sandbox: str | None = None
    depends_on: list[str] = EMPTY
    call_id: str = ""  # the spawn_thread call the child's events answer

    @property
    def parent_thread(self) -> str:
        return self.stack[-2]

    @property
    def depth(self) -> int:
        return len(self.stack) - 1

    @classmethod
    def _after_read(cls, record: ThreadRecord, where: str) -> None:
        stack = record.stack
        if not (
            is_thread_id(record.id)
            and len(stack) >= 2
            and stack[0] == ROOT
            and stack[-1] == record.id
            and all(is_thread_id(s) for s in [*stack[1:], *record.depends_on])
        ):
            raise StoreError(f"{where}: damaged thread record (its id or stack is not ours)")


class Closing(Declared):
    """closing.json: the close began, with the report the child closed with (if any)."""

    _what = "closing.json"
    by: str  # "child" (close_thread) or "runtime" (the job ended without one, R-S9)
    report: str | None
    at_ms: int


class Closed(Declared):
    """closed.json: the close finished. `failed` when the job failed or finalization did.
    `extra` is written beside the fields (not under a key of its own) and not read back."""

    _what = "closed.json"
    by: str
    at_ms: int
    failed: bool
    final: str  # the job's final state when it closed ("done", "error", "cancelled")
    error: str | None = None
    branch: str | None = None
    diff_stat: str | None = None
    commit: str | None = None
    extra: dict[str, Any] = EMPTY


class ThreadStore:
    def __init__(self, state_root: Path, *, records: Record | None = None) -> None:
        self.state_root = state_root
        self.root = state_root / THREADS_DIR
        self.records = records if records is not None else THREAD.record(self.root)

    def dir(self, thread_id: str) -> Path:
        return self.root / check_thread_id(thread_id)

    def _rec(self, thread_id: str) -> Record:
        return self.records.sub(check_thread_id(thread_id))

    # --- creating ----------------------------------------------------------------------

    def reserve(self) -> str:
        """A fresh id with its directory made (exclusively: a collision is simply retried)."""
        for _ in range(5):
            thread_id = new_thread_id()
            if self.reserve_id(thread_id):
                return thread_id
        raise StoreError("could not reserve a thread id (five collisions in a row)")

    def reserve_id(self, thread_id: str) -> bool:
        """Make the directory of `thread_id`; False when it exists already."""
        return self._rec(thread_id).create()

    def write(self, record: ThreadRecord) -> None:
        self._rec(record.id).replace("thread", record.to_dict())

    def discard(self, thread_id: str) -> None:
        """A launch that failed leaves no record (R-H7a)."""
        self._rec(thread_id).destroy()

    # --- reading -----------------------------------------------------------------------

    def get(self, thread_id: str) -> ThreadRecord | None:
        path = self.dir(thread_id) / "thread.json"
        try:
            data = self._rec(thread_id).read("thread")
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from None
        return None if data is None else ThreadRecord.from_dict(data, source=str(path))

    def all(self) -> tuple[list[ThreadRecord], list[str]]:
        """Every readable record (oldest first) and one problem line per damaged one."""
        records, problems = [], []
        for thread_id in self._ids():
            try:
                record = self.get(thread_id)
            except StoreError as exc:
                problems.append(exc.one_line())
                continue
            if record is not None:  # None: a launch in progress (or one that died)
                records.append(record)
        records.sort(key=lambda r: (r.created_at_ms, r.id))
        return records, problems

    @contextlib.contextmanager
    def spawning(self, parent: str) -> Iterator[None]:
        """Held while `parent` spawns: its limits are counted and its child recorded in one
        step, so concurrent spawns of one parent cannot pass a limit together (R-RLM4)."""
        with self.records.locked(f"spawn-{parent}"):
            yield

    def children_of(self, parent: str) -> list[ThreadRecord]:
        return [r for r in self.all()[0] if r.parent == parent]

    def _ids(self) -> Iterator[str]:
        yield from (n for n in self.records.children() if is_thread_id(n))

    # --- failed launches (R-H11) --------------------------------------------------------

    def record_failed_launch(self, parent: str, at_ms: int) -> None:
        """One line in the parent's journal of failed launches (under its spawn lock)."""
        log = f"spawn-{parent}-failures"
        self.records.append(log, {"at_ms": at_ms})
        if self.records.size(log) > MAX_FAILURES * 32:
            self.records.trim(log, MAX_FAILURES)

    def failed_launches(self, parent: str) -> list[int]:
        """When the parent's launches failed; 0.1.0's `spawn-<parent>.launch-failures`
        journal (the same lines, no suffix) is read too."""
        entries = list(self.records.lines(f"spawn-{parent}-failures").entries)
        try:
            raw = read_bytes(self.root / f"spawn-{parent}.launch-failures", 1 << 20)
        except (FileNotFoundError, NotADirectoryError):
            raw = b""
        old = []
        for line in raw.splitlines():
            with contextlib.suppress(ValueError):
                entry = json.loads(line)
                if isinstance(entry, dict):
                    old.append(entry)
        entries = old + entries
        at = [e.get("at_ms") for e in entries]
        return [a for a in at if isinstance(a, int) and not isinstance(a, bool)][-MAX_FAILURES:]

    # --- reports and close markers ------------------------------------------------------

    def append_report(self, thread_id: str, text: str, at_ms: int) -> int:
        """Append one report; returns its sequence number (1, 2, ...), counted durably."""
        rec = self._rec(thread_id)
        with rec.locked():
            found = rec.lines("reports")
            torn = found.end < rec.size("reports")  # a line a crash cut short took its number
            seq = 1 + len(found.entries) + len(found.problems) + torn
            rec.append("reports", {"seq": seq, "text": text, "at": at_ms})
        return seq

    def reports(self, thread_id: str) -> list[dict[str, Any]]:
        entries = self._rec(thread_id).lines("reports").entries
        return [e for e in entries if isinstance(e.get("text"), str)]

    def begin_close(self, thread_id: str, closing: Closing) -> bool:
        """Claim the close; False when it was already claimed (by the child or the runtime)."""
        return self._rec(thread_id).claim("closing", closing.to_dict())

    def closing(self, thread_id: str) -> Closing | None:
        data = self._marker(thread_id, "closing")
        if data is None:
            return None
        try:
            return Closing.from_dict(data)
        except StoreError:  # the close began; who began it and its report are lost
            return Closing("?", None, 0)

    def finish_close(self, thread_id: str, closed: Closed) -> bool:
        data = closed.to_dict()
        data.update(data.pop("extra"))
        return self._rec(thread_id).claim("closed", data)

    def closed(self, thread_id: str) -> Closed | None:
        data = self._marker(thread_id, "closed")
        if data is None:
            return None
        try:
            return Closed.from_dict({k: v for k, v in data.items() if k != "extra"})
        except StoreError:  # damaged means failed: never a success
            return Closed("?", 0, True, "?")

    def _marker(self, thread_id: str, name: str) -> dict[str, Any] | None:
        try:
            return self._rec(thread_id).read(name)
        except StoreError:
            return {}  # there, but damaged: the close happened; its details are lost
