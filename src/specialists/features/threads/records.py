"""The thread registry: who spawned which child job, and how far its close has come.

    .specialists/threads/<thread id>/      0700; made with an exclusive mkdir (the id is taken)
      thread.json                          the launch record, written once by the spawner (R-H4)
      reports.jsonl                        the child's reports, one per line, numbered (R-H5)
      closing.json                         the close began: its report (exclusive create)
      closed.json                          the close finished: outcome, sandbox stat (exclusive)

Thread ids are `t-` and 32 lowercase hex digits: 128 random bits, so ids never collide
across sessions or processes without any shared allocation state (R-H0). The root is `root`.
A thread's stack is the list of ids from root to itself.

Writers: the spawner writes thread.json; the child (its tools) appends reports and makes
closing.json; whoever finishes the close first (the child's close_thread, or the runtime
when the job ended without one, R-S9) makes closed.json. Both markers are created with
O_EXCL, so exactly one close happens however many try.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specialists.base.errors import StoreError, UserError
from specialists.store.atomic import write_atomic
from specialists.store.files import DIR_MODE, ensure_dir, open_dir, read_bytes, read_object
from specialists.store.locks import held

THREADS_DIR = "threads"
ROOT = "root"
MAX_DEPTH = 4  # R-H9: a thread this deep may not spawn
MAX_RECORD_BYTES = 256 * 1024
MAX_REPORTS_BYTES = 64 * 1024 * 1024
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


@dataclass(frozen=True)
class ThreadRecord:
    id: str
    parent: str  # owner key of the parent: job-<id> or an outside session
    stack: tuple[str, ...]  # root .. this thread
    job_id: str
    instructions: str
    fresh_context: bool
    runner: str
    created_at_ms: int
    sandbox: str | None = None
    depends_on: tuple[str, ...] = ()
    call_id: str = ""  # the spawn_thread call the child's events answer

    @property
    def parent_thread(self) -> str:
        return self.stack[-2]

    @property
    def depth(self) -> int:
        return len(self.stack) - 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "parent": self.parent,
            "stack": list(self.stack),
            "job_id": self.job_id,
            "instructions": self.instructions,
            "fresh_context": self.fresh_context,
            "runner": self.runner,
            "created_at_ms": self.created_at_ms,
            "sandbox": self.sandbox,
            "depends_on": list(self.depends_on),
            "call_id": self.call_id,
        }


def record_from_dict(data: dict[str, Any], where: str) -> ThreadRecord:
    """Field by field: the registry is files anyone in the project can write."""
    try:
        stack = tuple(data["stack"])
        record = ThreadRecord(
            id=data["id"],
            parent=data["parent"],
            stack=stack,
            job_id=data["job_id"],
            instructions=data["instructions"],
            fresh_context=data["fresh_context"],
            runner=data["runner"],
            created_at_ms=data["created_at_ms"],
            sandbox=data.get("sandbox"),
            depends_on=tuple(data.get("depends_on") or ()),
            call_id=data.get("call_id", ""),
        )
    except (KeyError, TypeError) as exc:
        raise StoreError(f"{where}: missing or bad field {exc}") from None
    ok = (
        is_thread_id(record.id)
        and all(isinstance(s, str) for s in (record.parent, record.job_id, record.runner))
        and isinstance(record.instructions, str)
        and type(record.fresh_context) is bool
        and type(record.created_at_ms) is int
        and len(stack) >= 2
        and stack[0] == ROOT
        and stack[-1] == record.id
        and all(is_thread_id(s) for s in stack[1:])
        and (record.sandbox is None or isinstance(record.sandbox, str))
        and all(is_thread_id(d) for d in record.depends_on)
        and isinstance(record.call_id, str)
    )
    if not ok:
        raise StoreError(f"{where}: damaged thread record")
    return record


@dataclass(frozen=True)
class Closing:
    """closing.json: the close began, with the report the child closed with (if any)."""

    by: str  # "child" (close_thread) or "runtime" (the job ended without one, R-S9)
    report: str | None
    at_ms: int


@dataclass(frozen=True)
class Closed:
    """closed.json: the close finished. `failed` when the job failed or finalization did."""

    by: str
    at_ms: int
    failed: bool
    final: str  # the job's final state when it closed ("done", "error", "cancelled")
    error: str | None = None
    branch: str | None = None
    diff_stat: str | None = None
    commit: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class ThreadStore:
    def __init__(self, state_root: Path) -> None:
        self.state_root = state_root
        self.root = state_root / THREADS_DIR

    def dir(self, thread_id: str) -> Path:
        return self.root / check_thread_id(thread_id)

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
        ensure_dir(self.state_root)
        ensure_dir(self.root)
        path = self.dir(thread_id)
        try:
            os.mkdir(path, DIR_MODE)
        except FileExistsError:
            return False
        os.chmod(path, DIR_MODE)
        return True

    def write(self, record: ThreadRecord) -> None:
        fd = open_dir(self.dir(record.id))
        try:
            write_atomic("thread.json", json.dumps(record.to_dict()).encode(), dir_fd=fd)
        finally:
            os.close(fd)

    def discard(self, thread_id: str) -> None:
        """A launch that failed leaves no record (R-H7a)."""
        path = self.dir(thread_id)
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISDIR(os.lstat(path).st_mode):
                shutil.rmtree(path)

    # --- reading -----------------------------------------------------------------------

    def get(self, thread_id: str) -> ThreadRecord | None:
        path = self.dir(thread_id) / "thread.json"
        try:
            data = read_object(path, MAX_RECORD_BYTES)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from None
        return record_from_dict(data, str(path))

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
        ensure_dir(self.state_root)
        ensure_dir(self.root)
        with held(self.root / f"spawn-{parent}.lock"):
            yield

    def children_of(self, parent: str) -> list[ThreadRecord]:
        return [r for r in self.all()[0] if r.parent == parent]

    def _ids(self) -> Iterator[str]:
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return
        yield from (n for n in sorted(names) if is_thread_id(n))

    # --- reports and close markers ------------------------------------------------------

    def append_report(self, thread_id: str, text: str, at_ms: int) -> int:
        """Append one report; returns its sequence number (1, 2, ...), counted durably."""
        base = self.dir(thread_id)
        with held(base / "reports.lock"):
            path = base / "reports.jsonl"
            seq = 1 + _count_lines(path)
            line = json.dumps({"seq": seq, "text": text, "at": at_ms}, ensure_ascii=False)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                data = (line + "\n").encode("utf-8")
                if os.write(fd, data) != len(data):
                    raise StoreError(f"short write to {path}")
            finally:
                os.close(fd)
        return seq

    def reports(self, thread_id: str) -> list[dict[str, Any]]:
        path = self.dir(thread_id) / "reports.jsonl"
        try:
            raw = read_bytes(path, MAX_REPORTS_BYTES)
        except FileNotFoundError:
            return []
        out = []
        for line in raw.splitlines():
            with contextlib.suppress(ValueError):
                item = json.loads(line)
                if isinstance(item, dict) and isinstance(item.get("text"), str):
                    out.append(item)
        return out

    def begin_close(self, thread_id: str, closing: Closing) -> bool:
        """Claim the close; False when it was already claimed (by the child or the runtime)."""
        data = {"by": closing.by, "report": closing.report, "at_ms": closing.at_ms}
        return _create_once(self.dir(thread_id) / "closing.json", data)

    def closing(self, thread_id: str) -> Closing | None:
        data = self._marker(thread_id, "closing.json")
        if data is None:
            return None
        report = data.get("report")
        return Closing(
            str(data.get("by", "?")),
            report if isinstance(report, str) else None,
            _int(data.get("at_ms")),
        )

    def finish_close(self, thread_id: str, closed: Closed) -> bool:
        data = {
            "by": closed.by,
            "at_ms": closed.at_ms,
            "failed": closed.failed,
            "final": closed.final,
            "error": closed.error,
            "branch": closed.branch,
            "diff_stat": closed.diff_stat,
            "commit": closed.commit,
            **closed.extra,
        }
        return _create_once(self.dir(thread_id) / "closed.json", data)

    def closed(self, thread_id: str) -> Closed | None:
        data = self._marker(thread_id, "closed.json")
        if data is None:
            return None

        def text(key: str) -> str | None:
            value = data.get(key)
            return value if isinstance(value, str) else None

        return Closed(
            by=text("by") or "?",
            at_ms=_int(data.get("at_ms")),
            failed=data.get("failed") is not False,  # damaged means failed: never a success
            final=text("final") or "?",
            error=text("error"),
            branch=text("branch"),
            diff_stat=text("diff_stat"),
            commit=text("commit"),
        )

    def _marker(self, thread_id: str, name: str) -> dict[str, Any] | None:
        path = self.dir(thread_id) / name
        try:
            return read_object(path, MAX_RECORD_BYTES)
        except FileNotFoundError:
            return None
        except StoreError:
            return {}  # there, but damaged: the close happened; its details are lost


def _create_once(path: Path, data: dict[str, Any]) -> bool:
    """Write `path` only if nothing is there yet (O_EXCL): the first writer wins."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        payload = json.dumps(data, ensure_ascii=False).encode("utf-8")
        os.write(fd, payload)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)  # atomic, complete, and refused when the name exists
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno == errno.EEXIST:
            return False
        raise
    finally:
        os.unlink(tmp)
    return True


def _count_lines(path: Path) -> int:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return 0
    count, last = 0, b"\n"
    try:
        while chunk := os.read(fd, 1 << 16):
            count += chunk.count(b"\n")
            last = chunk[-1:]
    finally:
        os.close(fd)
    return count + (last != b"\n")  # a line a crash cut short still took its number


def _int(value: object) -> int:
    return value if type(value) is int else 0
