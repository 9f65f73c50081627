"""events.jsonl: whole lines in, checked lines out.

A line is `{"seq": n, "ts": ms, "event": kind, ...}`. Readers check those three fields on
every line (`ts` may be absent); a bad line is skipped and described once, with its byte
offset. They cap the length of a line and the bytes read per call, and never follow a link.
The writer appends each line with one write(2) on an O_APPEND descriptor and cuts a short
write (a disk filling up mid-line) back off, so the file never ends in a partial line.
"""

from __future__ import annotations

import errno
import os

from specialists.base.errors import StoreError
from specialists.store.fields import describe, is_int
from specialists.store.files import open_regular, parse_object

TYPE_CHECKING = False  # no `typing` at run time: `status` and `feed` read this
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path
    from typing import Any

TERMINAL_EVENTS = frozenset({"done", "error", "cancelled"})
MAX_LINE = 64 * 1024  # longer is damage: the writer clips fields far below this
MAX_READ = 16 * 1024 * 1024  # per call; callers that follow a file call again
_TAIL = 256 * 1024  # how far back the last event is looked for
_CHUNK = 1024 * 1024


def check_event(obj: dict[str, Any]) -> str | None:
    """What is wrong with a parsed event line, or None."""
    seq: Any = obj.get("seq")
    ts: Any = obj.get("ts", 0)  # our writer always sets it; a reader can do without
    kind: Any = obj.get("event")
    if not is_int(seq) or seq < 1:
        return f"field 'seq' should be a positive integer, not {describe(seq)}"
    if not is_int(ts) or ts < 0:
        return f"field 'ts' should be a time in ms, not {describe(ts)}"
    if type(kind) is not str or not kind or len(kind) > 64:
        return f"field 'event' should be a short string, not {describe(kind)}"
    return None


def parse_event(line: bytes, where: str) -> dict[str, Any]:
    """One checked event from one line; StoreError saying what is wrong."""
    obj = parse_object(line, where)
    problem = check_event(obj)
    if problem:
        raise StoreError(f"{where}: {problem}")
    return obj


def split_lines(
    data: bytes,
    base: int,
    where: object,
    parse: Callable[[bytes, str], dict[str, Any]],
    max_line: int,
    limit: int | None = None,
) -> tuple[list[dict[str, Any]], int, list[str]]:
    """The entries of the whole lines in `data` (which starts at file offset `base`), each
    parsed by `parse`, the offset after the last line taken, and what was wrong: the one
    reading of every log, job logs and records alike. A last line without its newline is not
    taken (a writer may be mid-append); a line over `max_line` bytes or one `parse` refuses
    is described and skipped."""
    entries: list[dict[str, Any]] = []
    problems: list[str] = []
    pos = 0
    while limit is None or len(entries) < limit:
        nl = data.find(b"\n", pos)
        if nl < 0:
            break
        line = data[pos:nl]
        at = base + pos
        pos = nl + 1
        if not line.strip():
            continue
        if len(line) > max_line:
            problems.append(f"{where}: the line at byte {at} is over {max_line} bytes; skipped")
            continue
        try:
            entries.append(parse(line, f"{where}: the line at byte {at}"))
        except StoreError as exc:
            problems.append(exc.message)
    return entries, base + pos, problems


def read_lines(
    fd: int,
    start: int,
    stop: int,
    where: object,
    parse: Callable[[bytes, str], dict[str, Any]],
    max_line: int,
    limit: int | None = None,
) -> tuple[list[dict[str, Any]], int, list[str]]:
    """`split_lines` over the bytes of `fd` from `start` to `stop`, read a chunk at a time
    (at most `limit` entries). A line with no newline within `max_line` bytes is skipped."""
    entries: list[dict[str, Any]] = []
    problems: list[str] = []
    pos, carry = start, b""
    while pos + len(carry) < stop and (limit is None or len(entries) < limit):
        chunk = os.pread(fd, min(_CHUNK, stop - pos - len(carry)), pos + len(carry))
        if not chunk:
            break
        data = carry + chunk
        left = None if limit is None else limit - len(entries)
        got, end, bad = split_lines(data, pos, where, parse, max_line, left)
        entries.extend(got)
        problems.extend(bad)
        if end == pos and len(data) > max_line:  # no newline in a line's worth
            problems.append(f"{where}: the line at byte {pos} is over {max_line} bytes; skipped")
            skip = data.find(b"\n")
            pos, carry = (pos + len(data), b"") if skip < 0 else (pos + skip + 1, b"")
            continue
        carry = data[end - pos :]
        pos = end
    return entries, pos, problems


def read_event_lines(
    path: str | Path, offset: int, *, problems: list[str] | None = None, limit: int = MAX_READ
) -> tuple[list[dict[str, Any]], int]:
    """Whole, checked event lines from byte `offset`, and the offset after the last one.

    A trailing partial line (a writer mid-append) is left for the next call. A bad line is
    skipped and described in `problems` (each once: the offset moves past it). A file that
    is not a regular file raises StoreError. At most `limit` bytes are read per call.
    """
    try:
        fd = open_regular(path)
    except FileNotFoundError:
        return [], offset
    try:
        stop = min(os.fstat(fd).st_size, offset + limit)
        events, end, bad = read_lines(fd, offset, stop, path, parse_event, MAX_LINE)
    finally:
        os.close(fd)
    if problems is not None:
        problems.extend(bad)
    return events, end


def each_event(path: Path, offset: int = 0) -> Iterator[dict[str, Any]]:
    """Every whole, checked event from byte `offset` to the end, read MAX_READ at a time."""
    while True:
        events, end = read_event_lines(path, offset)
        yield from events
        if end == offset:
            return
        offset = end


def last_event(path: Path) -> dict[str, Any] | None:
    """The last whole, valid event of the file (None when there is none)."""
    try:
        fd = open_regular(path)
    except FileNotFoundError:
        return None
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - _TAIL)
        tail = os.pread(fd, size - start, start)
    finally:
        os.close(fd)
    lines = tail.split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first piece may be the end of a longer line
    del lines[-1:]  # after the last newline: empty, or a partial line (none: no newline)
    for line in reversed(lines):
        if len(line) > MAX_LINE:
            continue  # damage: the writer clips fields far below this
        try:
            return parse_event(line, str(path))
        except StoreError:
            continue
    return None


def last_event_seq(path: Path) -> int:
    """The seq of the last valid line in events.jsonl (0 when empty)."""
    last = last_event(path)
    return int(last["seq"]) if last else 0


def append_whole(fd: int, line: bytes) -> None:
    """Append `line` with one write on an O_APPEND descriptor, all of it or none of it.

    A short write (the disk filled mid-line) is cut back off and raised as ENOSPC.
    """
    written = os.write(fd, line)
    if written != len(line):
        os.ftruncate(fd, os.fstat(fd).st_size - written)
        raise OSError(errno.ENOSPC, "No space left on device (a partial line was removed)")
