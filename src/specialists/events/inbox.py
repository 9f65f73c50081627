"""One owner's durable inbox: `events.jsonl` (append-only) and `cursor.json` (what was taken).

    .specialists/owners/<owner>/
      events.jsonl   one Event per line, appended under `lock` by any producer
      cursor.json    {"offset": bytes acknowledged, "seen": [recent event ids]}
      lock           flock: appends, cursor updates and compaction take it briefly
      spill/         bodies too long for a line (spill.py)

Delivery is at-least-once (R-E6): `pending` reads what lies past the cursor, the front hands
it to the model, then `ack` moves the cursor. What was never acknowledged is read again after
a crash or restart. The seen-set (bounded, kept in the cursor) drops a second copy of an id
(R-E1), so a producer that retries after a crash does not wake the model twice.

Every line is untrusted: one that is not JSON, too long, or has a field of the wrong type is
reported (`Batch.problems`) and skipped, and the events after it are still delivered.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from specialists.base.errors import StoreError
from specialists.events.files import open_regular, owner_lock, write_all
from specialists.events.model import Event, EventSource, event_from_dict, event_id
from specialists.events.owners import check_owner, owner_dir
from specialists.events.spill import EVENT_LIMITS, SpillLimits, bound_body
from specialists.store.atomic import write_atomic

TYPE_CHECKING = False  # no `typing` at run time: the hooks load this module
if TYPE_CHECKING:
    from typing import Any

    from specialists.events.model import EventKind

EVENTS_FILE = "events.jsonl"
CURSOR_FILE = "cursor.json"
LOCK_FILE = "lock"
SPILL_DIR = "spill"

SEEN_CAP = 2000  # events.seenCap in seed 001
RECENT_TAIL_BYTES = 1 << 20  # where `holds_recent` looks for an event just appended
MAX_LINE_BYTES = 64 * 1024  # a body is bounded to a few KB; a longer line is damage
READ_CHUNK = 64 * 1024
MAX_DETAILS_BYTES = 16 * 1024
COMPACT_BYTES = 256 * 1024  # a fully acknowledged inbox this large is emptied
TAKE_MAX_EVENTS = 100
WAIT_INTERVAL_S = 0.025


@dataclass(frozen=True)
class Batch:
    """What `pending` found: events to deliver, and where the cursor goes once they are."""

    events: tuple[Event, ...]
    end_offset: int
    problems: tuple[str, ...] = ()
    duplicates: int = 0

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(e.id for e in self.events)


@dataclass
class _Cursor:
    offset: int = 0
    seen: list[str] = field(default_factory=list)


class Inbox:
    def __init__(
        self,
        state_root: Path,
        owner: str,
        *,
        seen_cap: int = SEEN_CAP,
        limits: SpillLimits = EVENT_LIMITS,
    ) -> None:
        self.owner = check_owner(owner)
        self.dir = owner_dir(state_root, owner)
        self.events_path = self.dir / EVENTS_FILE
        self.cursor_path = self.dir / CURSOR_FILE
        self.spill_dir = self.dir / SPILL_DIR
        self.seen_cap = seen_cap
        self.limits = limits

    # --- producing ------------------------------------------------------------------------

    def append(
        self,
        kind: EventKind,
        source: EventSource,
        body: str,
        *,
        source_id: str,
        seq: int,
        details: Mapping[str, Any] | None = None,
        ts_ms: int | None = None,
    ) -> Event:
        """Append one event (body bounded, spilled if long); returns it. Raises OSError."""
        self._ensure_dir()
        event = Event(
            id=event_id(source_id, kind, seq),
            kind=kind,
            owner=self.owner,
            ts_ms=ts_ms if ts_ms is not None else int(time.time() * 1000),
            source=source,
            body=bound_body(body, self.spill_dir, f"{kind}-{seq}", self.limits),
            details=_bounded_details(details or {}),
        )
        line = event.to_line()
        if len(line) > MAX_LINE_BYTES:  # huge args or details: keep the event, drop the bulk
            event = Event(
                event.id,
                event.kind,
                event.owner,
                event.ts_ms,
                EventSource(source.tool, source.call_id[:200]),
                event.body,
                {"truncated": True},
            )
            line = event.to_line()
        with self.locked():
            fd = open_regular(self.events_path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
            try:
                # A crash mid-append can leave a line without its newline: close it first, so
                # the damage stays on its own line and this event is read whole.
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    line = b"\n" + line
                write_all(fd, line)
            finally:
                os.close(fd)
        return event

    def holds_recent(self, event_id: str, tail_bytes: int = RECENT_TAIL_BYTES) -> bool:
        """Whether the event `event_id` is among the inbox's last `tail_bytes` (for a check
        right after its append). False when the file is absent or not a regular file."""
        try:
            fd = open_regular(self.events_path, os.O_RDONLY)
        except OSError:
            return False
        try:
            size = os.fstat(fd).st_size
            start = max(0, size - tail_bytes)
            tail = os.pread(fd, size - start, start)
        except OSError:
            return False
        finally:
            os.close(fd)
        return json.dumps(event_id).encode() in tail  # the id, quoted: never part of another

    # --- consuming ------------------------------------------------------------------------

    def has_pending(self) -> bool:
        """Cheap: a whole line past the cursor? (a line still being written is not pending,
        or a waiter woken for it would find nothing to take and spin)"""
        try:
            fd = open_regular(self.events_path, os.O_RDONLY)
        except FileNotFoundError:
            return False
        try:
            size = os.fstat(fd).st_size
            offset = self._read_cursor().offset
            if offset > size:
                offset = 0  # emptied by compaction
            if size <= offset:
                return False
            head = os.pread(fd, min(size - offset, MAX_LINE_BYTES + 1), offset)
        finally:
            os.close(fd)
        # A newline ends a line to deliver; no newline in a whole line's worth is damage that
        # `pending` must read past.
        return b"\n" in head or len(head) > MAX_LINE_BYTES

    def pending(self, *, max_events: int = TAKE_MAX_EVENTS) -> Batch:
        """Events past the cursor, deduplicated, in order; the cursor does not move."""
        return self._scan(self._read_cursor(), max_events)

    def since(self, offset: int, *, max_events: int = TAKE_MAX_EVENTS) -> Batch:
        """Events from byte `offset` on, acknowledged or not, for a reader that keeps its own
        place (`specialists events --all/--follow`); the cursor does not move."""
        return self._scan(_Cursor(max(0, offset)), max_events)

    def ack(self, batch: Batch) -> None:
        """The events of `batch` reached the model: move the cursor past them."""
        with self.locked():
            self._ack_locked(batch)

    def drop(self, ids: list[str]) -> None:
        """Never deliver these events (e.g. a job's notice once its result was read): their
        ids join the seen-set; the cursor does not move."""
        if not ids:
            return
        with self.locked():
            cursor = self._read_cursor()
            cursor.seen = (cursor.seen + [i for i in ids if i not in cursor.seen])[-self.seen_cap :]
            self._write_cursor(cursor)

    def take(self, *, max_events: int = TAKE_MAX_EVENTS) -> Batch:
        """pending + ack in one step, for fronts whose output is the delivery (hooks)."""
        with self.locked():
            batch = self._scan(self._read_cursor(), max_events)
            self._ack_locked(batch)
        return batch

    def wait(
        self,
        timeout_s: float,
        *,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        until: Callable[[], bool] | None = None,
    ) -> bool:
        """Wait up to `timeout_s` for pending events (or `until()`); True when there are some.

        A stat every 25 ms: cheap, and well inside the 100 ms delivery target.
        """
        deadline = monotonic() + max(0.0, timeout_s)
        while True:
            if self.has_pending():
                return True
            if until is not None and until():
                return False
            left = deadline - monotonic()
            if left <= 0:
                return False
            sleep(min(WAIT_INTERVAL_S, left))

    # --- internals ------------------------------------------------------------------------

    def _scan(self, cursor: _Cursor, max_events: int) -> Batch:
        try:
            fd = open_regular(self.events_path, os.O_RDONLY)
        except FileNotFoundError:
            return Batch((), 0)
        try:
            size = os.fstat(fd).st_size
            offset = cursor.offset if cursor.offset <= size else 0  # emptied by compaction
            seen = set(cursor.seen)
            events: list[Event] = []
            problems: list[str] = []
            duplicates = 0
            for line_end, line, problem in _lines(fd, offset, size):
                if problem is not None:
                    problems.append(problem)
                    offset = line_end
                    continue
                event, bad = _decode(line)
                if bad is not None or event is None:
                    problems.append(f"{self.events_path} at byte {offset}: {bad}")
                elif event.owner != self.owner:
                    problems.append(f"event {event.id!r} is for {event.owner!r}; skipped")
                elif event.id in seen:
                    duplicates += 1
                else:
                    seen.add(event.id)
                    events.append(event)
                offset = line_end
                if len(events) >= max_events:
                    break
            return Batch(tuple(events), offset, tuple(problems), duplicates)
        finally:
            os.close(fd)

    def _ack_locked(self, batch: Batch) -> None:
        cursor = self._read_cursor()
        if batch.end_offset <= cursor.offset and not batch.events:
            return
        cursor.offset = max(cursor.offset, batch.end_offset)
        cursor.seen = (cursor.seen + list(batch.ids))[-self.seen_cap :]
        try:
            size = os.stat(self.events_path).st_size
        except FileNotFoundError:
            size = 0
        if cursor.offset >= size >= COMPACT_BYTES:
            # Everything was delivered: empty the file (producers wait on the same lock).
            fd = open_regular(self.events_path, os.O_WRONLY)
            try:
                os.ftruncate(fd, 0)
            finally:
                os.close(fd)
            cursor.offset = 0
        self._write_cursor(cursor)

    def _read_cursor(self) -> _Cursor:
        try:
            fd = open_regular(self.cursor_path, os.O_RDONLY)
        except FileNotFoundError:
            return _Cursor()
        try:
            raw = os.read(fd, 1024 * 1024)
        finally:
            os.close(fd)
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            data = None
        offset = data.get("offset") if isinstance(data, dict) else None
        seen = data.get("seen") if isinstance(data, dict) else None
        if (
            isinstance(offset, bool)
            or not isinstance(offset, int)
            or offset < 0
            or not isinstance(seen, list)
            or not all(isinstance(s, str) for s in seen)
        ):
            # Unknown progress: deliver again from the start (at-least-once beats lost).
            return _Cursor()
        return _Cursor(offset, seen[-self.seen_cap :])

    def _write_cursor(self, cursor: _Cursor) -> None:
        data = json.dumps({"offset": cursor.offset, "seen": cursor.seen}, separators=(",", ":"))
        write_atomic(self.cursor_path, data.encode())
        os.chmod(self.cursor_path, 0o600)

    def _ensure_dir(self) -> None:
        if self.dir.is_symlink():
            raise StoreError(f"{self.dir} is a symlink; refusing to write through it")
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """The owner's lock (appends, cursor, timers); re-entrant within this process."""
        self._ensure_dir()
        with owner_lock(self.dir / LOCK_FILE):
            yield


def _lines(fd: int, start: int, end: int) -> Iterator[tuple[int, bytes, str | None]]:
    """(offset after the line, line, problem) for whole lines in [start, end), read in chunks.

    A line longer than MAX_LINE_BYTES is skipped to its newline with one problem; a last line
    without a newline is left alone (a producer may be mid-append).
    """
    buf = bytearray()
    pos = start  # file offset of buf[0]
    skipping = False
    read_at = start
    while read_at < end:
        chunk = os.pread(fd, min(READ_CHUNK, end - read_at), read_at)
        if not chunk:
            break
        read_at += len(chunk)
        buf += chunk
        while True:
            nl = buf.find(b"\n")
            if nl < 0:
                if len(buf) > MAX_LINE_BYTES:
                    if not skipping:
                        yield (
                            pos + len(buf),
                            b"",
                            f"line at byte {pos} is over {MAX_LINE_BYTES} bytes; skipped",
                        )
                    skipping = True
                    pos += len(buf)
                    buf.clear()
                break
            line = bytes(buf[:nl])
            line_end = pos + nl + 1
            del buf[: nl + 1]
            if skipping:
                skipping = False
            elif len(line) > MAX_LINE_BYTES:
                yield line_end, b"", f"line at byte {pos} is over {MAX_LINE_BYTES} bytes; skipped"
            elif line.strip():
                yield line_end, line, None
            pos = line_end


def _decode(line: bytes) -> tuple[Event | None, str | None]:
    try:
        data = json.loads(line)
    except RecursionError:
        return None, "nested too deeply"
    except ValueError as exc:
        return None, f"not JSON ({str(exc)[:80]})"
    return event_from_dict(data)


def _bounded_details(details: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(details)
    text = json.dumps(out, default=str)
    return out if len(text) <= MAX_DETAILS_BYTES else {"truncated": True}
