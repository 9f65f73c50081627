"""The control inbox: other processes ask a job's supervisor to act.

A request is one small JSON document in <job>/control/ (a Record: kinds.py JOB), replaced
whole so the supervisor never reads half of one. The supervisor handles requests in name order,
deletes each file and acknowledges by an event carrying the request id.

The inbox is untrusted input: anyone who can write to the project can drop files there. The
supervisor opens control/ without following a link, reads only regular files of at most
MAX_REQUEST bytes, checks each request field by field, and moves anything else (a FIFO, a
directory, a symlink to /proc/self/mem, JSON nested 100,000 deep, a number that overflows)
aside as `.<name>.bad`, reported once as a problem, so it can neither hang nor kill it.
"""

from __future__ import annotations

import errno
import json
import os
import time
from pathlib import Path
from typing import Literal

from specialists.base.errors import Planted, StoreError, UserError
from specialists.store.fields import Declared
from specialists.store.file_record import FileRecord
from specialists.store.files import displace, size_text
from specialists.store.jobs import CONTROL_DIR

ControlKind = Literal["steer", "follow_up", "abort", "stop", "interrupt"]
CONTROL_KINDS: tuple[str, ...] = ("steer", "follow_up", "abort", "stop", "interrupt")
MAX_REQUEST = 1024 * 1024
MAX_BATCH = 100  # requests handled per look at the inbox; the rest wait for the next


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
    try:
        message.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: the supervisor would refuse it
        raise UserError(f"the message is not valid UTF-8 text (at character {exc.start})") from None
    now_ns = time.time_ns()
    request = ControlRequest(
        id=os.urandom(4).hex(), kind=kind, message=message, sent_at_ms=now_ns // 1_000_000
    )
    data = json.dumps(request.to_dict()).encode()
    if len(data) > MAX_REQUEST:
        raise UserError(f"the message is too long ({size_text(len(data))}; at most 1 MiB)")
    if not os.path.isdir(job_dir):  # gone (gc): never made again by a request
        raise FileNotFoundError(errno.ENOENT, "no such job directory", str(job_dir))
    # Names sort by send time (ns): requests are handled in the order they were sent.
    _inbox(job_dir).replace(f"{now_ns:020d}-{request.id}", request.to_dict())
    return request


def _inbox(job_dir: Path) -> FileRecord:
    return FileRecord(job_dir / CONTROL_DIR, max_doc=MAX_REQUEST + 4096)  # + its indent


def take_requests(job_dir: Path) -> tuple[list[ControlRequest], list[str]]:
    """Read and delete pending requests. Returns (requests, problems with bad entries)."""
    inbox = _inbox(job_dir)
    try:
        names = inbox.docs()[:MAX_BATCH]
    except Planted:
        aside = displace(inbox.path)
        return [], [f"{CONTROL_DIR}/ was not a directory (a symbolic link?); moved to {aside}"]
    requests: list[ControlRequest] = []
    problems: list[str] = []
    for name in names:
        where = f"control request {name}.json"
        try:
            data = inbox.read(name)
            if data is None:
                continue
            requests.append(ControlRequest.from_dict(data, source=where))
        except StoreError as exc:
            problems.append(f"{exc.message}; {_set_aside(inbox.path, name + '.json')}")
            continue
        inbox.remove(name)
    return requests, problems


def stop_pending(job_dir: Path) -> bool:
    """A stop request waits in the inbox (read, not taken): recovery records that the job
    was stopped, not that its supervisor crashed. A bad entry is no request."""
    inbox = _inbox(job_dir)
    try:
        names = inbox.docs()[:MAX_BATCH]
    except StoreError:
        return False
    for name in names:
        try:
            data = inbox.read(name)
            if data is not None and ControlRequest.from_dict(data, source=name).kind == "stop":
                return True
        except StoreError:
            continue
    return False


def _set_aside(inbox: Path, name: str) -> str:
    """Move a bad entry out of the way (dot names are never read again); says what was done."""
    try:
        os.rename(inbox / name, inbox / f".{name}.bad")
    except FileNotFoundError:
        return "ignored (it is gone)"
    except OSError as exc:
        return f"ignored, but it could not be moved aside ({exc.strerror})"
    return f"ignored and kept as .{name}.bad"


def pending_count(job_dir: Path) -> int:
    try:
        return len(_inbox(job_dir).docs())
    except StoreError:
        return 0
