"""Reading a background command's log by byte offset without splitting a character (R-J3).

`read_since(path, since)` returns text from byte `since` and the offset to continue from:
a `since` inside a UTF-8 character skips that character's remaining bytes, and a character
cut by the end of what was read is left for the next call. `read_tail` returns the last N
lines. Both read at most `max_bytes`, so a huge log costs a bounded read.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from specialists.base.errors import UserError

MAX_READ_BYTES = 64 * 1024
_TAIL_CHUNK = 8 * 1024


@dataclass(frozen=True)
class OutputSlice:
    text: str
    next_offset: int  # give this as `since` to continue
    size: int  # the log's size when read


def _open_log(path: Path) -> int:
    """A read fd on the log; FileNotFoundError when there is none, UserError when something
    else is in its place (a link is never followed)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        why = "is a symbolic link; not followed" if exc.errno == errno.ELOOP else exc.strerror
        raise UserError(f"{path} cannot be read: {why or exc}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UserError(f"{path} is not a regular file")
    return fd


def _is_continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def _complete_prefix(data: bytes) -> int:
    """Length of `data` without a UTF-8 character cut short at its end."""
    end = len(data)
    back = 0
    while back < min(3, end) and _is_continuation(data[end - 1 - back]):
        back += 1
    lead_at = end - 1 - back
    if lead_at < 0:
        return end
    lead = data[lead_at]
    need = (
        1
        if lead < 0x80
        else 2
        if lead >> 5 == 0b110
        else 3
        if lead >> 4 == 0b1110
        else 4
        if lead >> 3 == 0b11110
        else 1
    )
    return lead_at if back + 1 < need else end


def read_since(path: Path, since: int, *, max_bytes: int = MAX_READ_BYTES) -> OutputSlice:
    if isinstance(since, bool) or not isinstance(since, int) or since < 0:
        raise UserError("since must be a non-negative integer byte offset")
    try:
        fd = _open_log(path)
    except FileNotFoundError:
        return OutputSlice("", since, 0)
    try:
        size = os.fstat(fd).st_size
        if since >= size:
            return OutputSlice("", since, size)
        data = os.pread(fd, min(max_bytes + 3, size - since), since)
    finally:
        os.close(fd)
    start = 0
    while start < min(3, len(data)) and _is_continuation(data[start]):
        start += 1  # `since` fell inside a character: skip the rest of it
    body = data[start : start + max_bytes] if len(data) > max_bytes else data[start:]
    keep = _complete_prefix(body)
    text = body[:keep].decode("utf-8", "replace")
    return OutputSlice(text, since + start + keep, size)


def read_tail(path: Path, lines: int, *, max_bytes: int = MAX_READ_BYTES) -> OutputSlice:
    """The last `lines` lines (at most `max_bytes` of them)."""
    if isinstance(lines, bool) or not isinstance(lines, int) or lines <= 0:
        raise UserError("tail must be a positive integer number of lines")
    try:
        fd = _open_log(path)
    except FileNotFoundError:
        return OutputSlice("", 0, 0)
    try:
        size = os.fstat(fd).st_size
        pos, data = size, b""
        while pos > 0 and data.count(b"\n") <= lines and len(data) < max_bytes:
            step = min(_TAIL_CHUNK, pos)
            pos -= step
            data = os.pread(fd, step, pos) + data
    finally:
        os.close(fd)
    body = data.rstrip(b"\n") if data.endswith(b"\n") else data
    kept = body.split(b"\n")[-lines:]
    text = b"\n".join(kept)[-max_bytes:]
    start = 0
    while start < min(3, len(text)) and _is_continuation(text[start]):
        start += 1
    return OutputSlice(text[start:].decode("utf-8", "replace"), size, size)
