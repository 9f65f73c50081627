"""A job's control requests (steer, follow-up, abort, stop, interrupt): events addressed to it.

A request is one event of kind `control` (events/model.py's format) appended to the job's own
inbox, owners/job-<id>/events.jsonl (a Record of kind OWNER, kinds.py): any number of senders
append whole lines under the owner's lock. The model's readers skip these lines
(events/inbox.py); the job's supervisor reads them through a cursor of its own, control.json
({"offset", "seen", "taking", "log"}), and acts once per request id:

- a request appended twice (a sender that retried) is in `seen` the second time;
- before acting, the cursor names the request in hand (`taking`) and how long the job's log
  was (`log`). Acting writes an ack carrying the request id to that log, so a successor of a
  supervisor killed between acting and moving the cursor finds the ack there and moves on.

Release 0.1.0 wrote each request as a file in <job>/control/: those are read first (they are
older), each deleted as it is taken, until none is left; nothing writes them any more.

Every line and file is untrusted (anyone who can write to the project can): a request is
checked field by field, a bad one reported once and passed over; a FIFO, a symlink or a
directory planted where a log, a file or control/ belongs is moved aside, never opened.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from specialists.base.errors import Planted, StoreError, UserError
from specialists.store.fields import Declared
from specialists.store.file_record import FileRecord
from specialists.store.files import displace, size_text
from specialists.store.joblog import each_event
from specialists.store.jobs import CONTROL_DIR, EVENTS_FILE
from specialists.store.kinds import OWNER
from specialists.store.record import Record, encode_line

ControlKind = Literal["steer", "follow_up", "abort", "stop", "interrupt"]
CONTROL_KINDS: tuple[str, ...] = ("steer", "follow_up", "abort", "stop", "interrupt")
MAX_REQUEST = 1024 * 1024
MAX_BATCH = 100  # requests handled per look; the rest wait for the next
SEEN_CAP = 256  # request ids kept: a sender retries at once, not a day later
EVENTS, CURSOR = "events", "control"  # the owner's events.jsonl, the supervisor's control.json


class ControlRequest(Declared):
    _what = "control request"
    _choices = {"kind": frozenset(CONTROL_KINDS)}
    id: str
    kind: str
    message: str = ""
    sent_at_ms: int = 0

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("ControlRequest is immutable")


def post_request(job_dir: Path, kind: ControlKind, message: str = "") -> ControlRequest:
    """Append the request to the job's inbox; raises UserError for a message the supervisor
    would refuse, FileNotFoundError for a job that is gone, StoreError for a planted file."""
    try:
        message.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: the supervisor would refuse it
        raise UserError(f"the message is not valid UTF-8 text (at character {exc.start})") from None
    request = ControlRequest(
        id=os.urandom(4).hex(), kind=kind, message=message, sent_at_ms=time.time_ns() // 10**6
    )
    event = {
        "id": f"{request.id}:control:1",
        "kind": "control",
        "owner": f"job-{job_dir.name}",
        "ts": request.sent_at_ms,
        "source": {"tool": kind},
        "body": message,
        "details": {"request": request.id, "control": kind},
    }
    if len(encode_line(event)) > MAX_REQUEST:
        size = size_text(len(encode_line(event)))
        raise UserError(f"the message is too long ({size}; at most 1 MiB)")
    if not os.path.isdir(job_dir):  # gone (gc): never made again by a request
        raise FileNotFoundError(errno.ENOENT, "no such job directory", str(job_dir))
    _owner(job_dir).append(EVENTS, event)
    return request


def _owner(job_dir: Path) -> FileRecord:
    return OWNER.record(job_dir.parent.parent / "owners" / f"job-{job_dir.name}")


def _request(entry: dict[str, Any], where: str) -> ControlRequest:
    details = entry.get("details")
    if not isinstance(details, dict):
        raise StoreError(f"{where}: field 'details' should be an object")
    fields = {"id": details.get("request"), "kind": details.get("control")}
    fields |= {"message": entry.get("body"), "sent_at_ms": entry.get("ts")}
    return ControlRequest.from_dict(fields, source=where)


class _Cursor:
    def __init__(self, record: Record) -> None:
        self.damaged = False
        try:
            data = record.read(CURSOR) or {}
        except StoreError:  # read from the start; `seen` is gone, the job log's acks are not
            data, self.damaged = {}, True
        offset, seen, self.taking, self.log = (
            data.get(k) for k in ("offset", "seen", "taking", "log")
        )
        self.offset = offset if type(offset) is int and offset >= 0 else 0
        self.seen = [s for s in seen if type(s) is str] if isinstance(seen, list) else []
        self.start = self.offset

    def save(self, record: Record, taking: str | None = None, log: int = 0) -> None:
        """Under the owner's lock; an inbox emptied meanwhile (events/inbox.py) rewound the
        cursor to 0, and that offset stands (the ids taken are kept)."""
        with record.locked():
            if _Cursor(record).offset != self.start:
                self.offset = 0
            self.seen = self.seen[-SEEN_CAP:]
            doc = {"offset": self.offset, "seen": self.seen, "taking": taking, "log": log}
            record.replace(CURSOR, doc)
            self.start = self.offset


class InboxMark:
    """A cheap look (two stats) at whether a request may have arrived since the last look,
    for a supervisor that looks every step, which is every batch of the agent's output: the
    full look reads the cursor and builds paths, and cost most of a streaming job's CPU."""

    def __init__(self, job_dir: Path) -> None:
        self.legacy = str(job_dir / CONTROL_DIR)
        self.log = str(_owner(job_dir).path / f"{EVENTS}.jsonl")

    def now(self) -> tuple[int, int, int] | None:
        """The owner log's inode, size and mtime: an append changes its size, emptying it
        (events/inbox.py) its inode. None: look anyway (0.1.0's request directory is there,
        or the log cannot be looked at, which the full look reports)."""
        if os.path.lexists(self.legacy):
            return None
        try:
            st = os.stat(self.log)
        except FileNotFoundError:
            return (0, 0, 0)  # no request was ever sent
        except OSError:
            return None  # the full look reports what is wrong there
        return (st.st_ino, st.st_size, st.st_mtime_ns)


def read_requests(job_dir: Path, act: Callable[[ControlRequest], object]) -> list[str]:
    """Hand each pending request to `act` once, in the order sent; a true answer from `act`
    stops there (the rest wait for the next look). Returns problems as lines, never raises
    for a bad request or a planted file."""
    problems: list[str] = []
    for request in _legacy(job_dir, problems):
        if act(request):
            return problems
    record = _owner(job_dir)
    try:
        size = record.size(EVENTS)
        if size and size != (cursor := _Cursor(record)).offset:  # the usual look: nothing new
            _read(record, cursor, job_dir, act, problems)
    except Planted as exc:  # the owner's directory or its log: whichever is not ours
        ours = os.path.isdir(record.path) and not os.path.islink(record.path)
        aside = displace(record.path / "events.jsonl" if ours else record.path)
        problems.append(f"{exc.message}; moved to {aside}")
    return problems


def _read(
    record: Record,
    cursor: _Cursor,
    job_dir: Path,
    act: Callable[[ControlRequest], object],
    problems: list[str],
) -> None:
    handled = 0
    while handled < MAX_BATCH:
        found = record.lines(EVENTS, start=cursor.offset, limit=1)
        problems.extend(found.problems)
        at, cursor.offset = cursor.offset, found.end
        if not found.entries or found.entries[0].get("kind") != "control":
            if at == found.end:
                break
            continue
        try:
            request = _request(found.entries[0], f"control request at byte {at}")
        except StoreError as exc:
            problems.append(f"{exc.message}; ignored")
            continue
        if request.id in cursor.seen or (
            (cursor.damaged or cursor.taking == request.id)
            and _acked(job_dir, request.id, 0 if cursor.damaged else cursor.log)
        ):
            continue  # sent twice, or acted on by a supervisor that died before moving on
        cursor.offset = at
        cursor.save(record, request.id, _size(job_dir / EVENTS_FILE))
        cursor.offset = found.end
        stop = act(request)
        cursor.seen.append(request.id)
        cursor.save(record)
        handled += 1
        if stop:
            return
    if cursor.offset != cursor.start:
        cursor.save(record)


def _acked(job_dir: Path, request_id: str, log: object) -> bool:
    """Does the job's log hold an event for this request from byte `log` on?"""
    offset = log if type(log) is int and log >= 0 else 0
    return any(e.get("request") == request_id for e in each_event(job_dir / EVENTS_FILE, offset))


def _size(path: Path) -> int:
    try:
        return os.lstat(path).st_size
    except FileNotFoundError:
        return 0


def _legacy(job_dir: Path, problems: list[str]) -> Iterator[ControlRequest]:
    """0.1.0's request files, each deleted as it is taken, in name order (as sent)."""
    inbox = FileRecord(job_dir / CONTROL_DIR, max_doc=MAX_REQUEST + 4096)
    try:
        names = inbox.docs()[:MAX_BATCH] if os.path.lexists(inbox.path) else []
    except Planted:
        aside = displace(inbox.path)
        problems.append(f"{CONTROL_DIR}/ was not a directory (a symbolic link?); moved to {aside}")
        return
    for name in names:
        try:
            data = inbox.read(name)
            if data is None:
                continue
            request = ControlRequest.from_dict(data, source=f"control request {name}.json")
        except StoreError as exc:
            problems.append(f"{exc.message}; {_set_aside(inbox.path, name + '.json')}")
            continue
        inbox.remove(name)
        yield request


def _set_aside(inbox: Path, name: str) -> str:
    """Move a bad entry out of the way (dot names are never read again); says what was done."""
    try:
        os.rename(inbox / name, inbox / f".{name}.bad")
    except FileNotFoundError:
        return "ignored (it is gone)"
    except OSError as exc:
        return f"ignored, but it could not be moved aside ({exc.strerror})"
    return f"ignored and kept as .{name}.bad"


def stop_pending(job_dir: Path) -> bool:
    """A stop request waits (read, not taken): recovery records that the job was stopped,
    not that its supervisor crashed. A bad entry is no request."""
    legacy = FileRecord(job_dir / CONTROL_DIR, max_doc=MAX_REQUEST + 4096)
    try:
        for name in legacy.docs()[:MAX_BATCH] if os.path.lexists(legacy.path) else []:
            with contextlib.suppress(StoreError):  # a bad entry is no request
                if (legacy.read(name) or {}).get("kind") == "stop":
                    return True
        return "stop" in _waiting(_owner(job_dir))[1]
    except StoreError:
        return False


def _waiting(record: Record) -> tuple[_Cursor, list[str]]:
    """The supervisor's cursor, and the kinds of the requests past it not yet taken."""
    cursor, kinds = _Cursor(record), []
    for entry in record.lines(EVENTS, start=cursor.offset).entries:
        details = entry.get("details") if entry.get("kind") == "control" else None
        if isinstance(details, dict) and details.get("request") not in cursor.seen:
            kinds.append(str(details.get("control")))
    return cursor, kinds


def may_empty(record: Record) -> bool:
    """Under the owner's lock, for an inbox about to empty its log (events/inbox.py): False
    while a request waits for the supervisor; else True, and its cursor is rewound to 0."""
    cursor, waiting = _waiting(record)
    if waiting:
        return False
    if cursor.offset:
        cursor.offset = 0
        cursor.save(record)
    return True
