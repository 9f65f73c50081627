"""The control inbox: other processes ask a job's supervisor to act.

A request is one small JSON file in <job>/control/, written atomically (temp + rename) so
the supervisor never reads half of one. The supervisor handles requests in name order,
deletes each file and acknowledges by an event carrying the request id.

The inbox is untrusted input: anyone who can write to the project can drop files there. The
supervisor opens control/ without following a link, reads only regular files of at most
MAX_REQUEST bytes, checks each request field by field, and moves anything else (a FIFO, a
directory, a symlink to /proc/self/mem, JSON nested 100,000 deep, a number that overflows)
aside as `.<name>.bad`, reported once as a problem, so it can neither hang nor kill it.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from specialists.base.errors import StoreError, UserError
from specialists.store.atomic import write_atomic
from specialists.store.fields import Declared
from specialists.store.files import (
    displace,
    ensure_dir,
    open_dir,
    parse_object,
    read_bytes,
    size_text,
)
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
    inbox = job_dir / CONTROL_DIR
    ensure_dir(inbox)  # refuses a control/ that is a link out of the store
    inbox_fd = open_dir(inbox)
    try:
        # Names sort by send time (ns): requests are handled in the order they were sent.
        write_atomic(f"{now_ns:020d}-{request.id}.json", data, dir_fd=inbox_fd)
    finally:
        os.close(inbox_fd)
    return request


def take_requests(job_dir: Path) -> tuple[list[ControlRequest], list[str]]:
    """Read and delete pending requests. Returns (requests, problems with bad entries)."""
    inbox = job_dir / CONTROL_DIR
    try:
        inbox_fd = open_dir(inbox)
    except FileNotFoundError:
        return [], []
    except StoreError:
        aside = displace(inbox)
        return [], [f"{CONTROL_DIR}/ was not a directory (a symbolic link?); moved to {aside}"]
    requests: list[ControlRequest] = []
    problems: list[str] = []
    try:
        for name, entry in _entries(inbox_fd):
            if isinstance(entry, StoreError):
                problems.append(f"{entry.message}; {_set_aside(name, inbox_fd)}")
                continue
            requests.append(entry)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=inbox_fd)
    finally:
        os.close(inbox_fd)
    return requests, problems


def stop_pending(job_dir: Path) -> bool:
    """A stop request waits in the inbox (read, not taken): recovery records that the job
    was stopped, not that its supervisor crashed. A bad entry is no request."""
    try:
        inbox_fd = open_dir(job_dir / CONTROL_DIR)
    except (FileNotFoundError, StoreError):
        return False
    try:
        return any(
            isinstance(entry, ControlRequest) and entry.kind == "stop"
            for _, entry in _entries(inbox_fd)
        )
    finally:
        os.close(inbox_fd)


def _entries(inbox_fd: int) -> Iterator[tuple[str, ControlRequest | StoreError]]:
    """The oldest MAX_BATCH entries, each a request or why it is none (gone ones skipped)."""
    names = heapq.nsmallest(
        MAX_BATCH,
        (n for n in os.listdir(inbox_fd) if n.endswith(".json") and not n.startswith(".")),
    )
    for name in names:
        where = f"control request {name}"
        try:
            raw = read_bytes(name, MAX_REQUEST, dir_fd=inbox_fd, label=where)
            yield name, ControlRequest.from_dict(parse_object(raw, where), source=where)
        except FileNotFoundError:
            continue
        except StoreError as exc:
            yield name, exc


def _set_aside(name: str, inbox_fd: int) -> str:
    """Move a bad entry out of the way (dot names are never read again); says what was done."""
    try:
        os.rename(name, f".{name}.bad", src_dir_fd=inbox_fd, dst_dir_fd=inbox_fd)
    except FileNotFoundError:
        return "ignored (it is gone)"
    except OSError as exc:
        return f"ignored, but it could not be moved aside ({exc.strerror})"
    return f"ignored and kept as .{name}.bad"


def pending_count(job_dir: Path) -> int:
    try:
        inbox_fd = open_dir(job_dir / CONTROL_DIR)
    except (FileNotFoundError, StoreError):
        return 0
    try:
        return sum(1 for n in os.listdir(inbox_fd) if n.endswith(".json") and not n.startswith("."))
    finally:
        os.close(inbox_fd)
