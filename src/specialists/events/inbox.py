"""One owner's durable inbox: the log `events.jsonl` and the document `cursor.json`
({"offset": bytes acknowledged, "seen": [recent ids]}) of its Record (store/kinds.py OWNER).

Delivery is at-least-once (R-E6): `pending` reads what lies past the cursor, the front hands
it to the model, then `ack` moves the cursor. What was never acknowledged is read again after
a crash or restart. The seen-set (bounded, kept in the cursor) drops a second copy of an id
(R-E1), so a producer that retries after a crash does not wake the model twice.

A job's inbox also holds the requests addressed to its supervisor (kind `control`,
store/control.py), which reads them through a cursor of its own: they are never delivered,
and the log is emptied only when none of them waits.

Every line is untrusted: one that is not JSON, too long, or has a field of the wrong type is
reported (`Batch.problems`) and skipped, and the events after it are still delivered.
"""

from __future__ import annotations

import contextlib
import errno
import json
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from specialists.base.errors import Planted, StoreError
from specialists.base.tuples import NamedTuple
from specialists.events.model import Event, EventSource, event_from_dict, event_id
from specialists.events.owners import INBOX_NAME, check_owner, owner_dir
from specialists.events.spill import EVENT_LIMITS, SpillLimits, bound_body
from specialists.store.control import may_empty
from specialists.store.kinds import OWNER

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from specialists.events.model import EventKind
    from specialists.store.record import Record

EVENTS = "events"  # events.jsonl
CURSOR = "cursor"  # cursor.json
EVENTS_FILE = INBOX_NAME
CURSOR_FILE = "cursor.json"
SPILL_DIR = "spill"

SEEN_CAP = 2000  # events.seenCap in seed 001
RECENT_TAIL_BYTES = 1 << 20  # where `holds_recent` looks for an event just appended
MAX_LINE_BYTES = 64 * 1024  # a body is bounded to a few KB; a longer event is cut
MAX_DETAILS_BYTES = 16 * 1024
COMPACT_BYTES = 256 * 1024  # a fully acknowledged inbox this large is emptied
TAKE_MAX_EVENTS = 100
WAIT_INTERVAL_S = 0.025


class Batch(NamedTuple):
    """What `pending` found: events to deliver, and where the cursor goes once they are."""

    events: tuple[Event, ...]
    end_offset: int
    problems: tuple[str, ...] = ()
    duplicates: int = 0

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(e.id for e in self.events)


class _Cursor:
    __slots__ = ("offset", "seen")

    def __init__(self, offset: int = 0, seen: list[str] | None = None) -> None:
        self.offset = offset
        self.seen = [] if seen is None else seen


@contextlib.contextmanager
def _untrusted() -> Iterator[None]:
    """A planted file (a symlink, a FIFO) is an OSError here, as every caller of an inbox
    expects of a file it could not use (R-E5: logged, never raised into a supervisor)."""
    try:
        yield
    except Planted as exc:
        raise OSError(errno.EINVAL, exc.message) from None


class Inbox:
    def __init__(
        self,
        state_root: Path,
        owner: str,
        *,
        seen_cap: int = SEEN_CAP,
        limits: SpillLimits = EVENT_LIMITS,
        record: Record | None = None,
    ) -> None:
        self.owner = check_owner(owner)
        self.dir = owner_dir(state_root, owner)
        self.record = record if record is not None else OWNER.record(self.dir)
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
        self.record.ensure()
        event = Event(
            id=event_id(source_id, kind, seq),
            kind=kind,
            owner=self.owner,
            ts_ms=ts_ms if ts_ms is not None else int(time.time() * 1000),
            source=source,
            body=bound_body(body, self.spill_dir, f"{kind}-{seq}", self.limits),
            details=_bounded_details(details or {}),
        )
        if len(event.to_line()) > MAX_LINE_BYTES:  # huge args or details: drop the bulk
            event = Event(
                event.id,
                event.kind,
                event.owner,
                event.ts_ms,
                EventSource(source.tool, source.call_id[:200]),
                event.body,
                {"truncated": True},
            )
        with _untrusted():
            # A lone surrogate (an agent's broken text) becomes U+FFFD: the line stays readable.
            self.record.append(EVENTS, json.loads(event.to_line().decode("utf-8", "replace")))
        return event

    def holds_recent(self, event_id: str, tail_bytes: int = RECENT_TAIL_BYTES) -> bool:
        """Whether the event `event_id` is among the inbox's last `tail_bytes` (for a check
        right after its append). False when the file is absent or not a regular file."""
        try:
            start = max(0, self.record.size(EVENTS) - tail_bytes)
            found = self.record.lines(EVENTS, start=start)
        except (OSError, StoreError):
            return False
        return any(e.get("id") == event_id for e in found.entries)

    # --- consuming ------------------------------------------------------------------------

    def has_pending(self) -> bool:
        """Cheap: a whole line past the cursor? (a line still being written is not pending,
        or a waiter woken for it would find nothing to take and spin)"""
        offset = self._read_cursor().offset
        while True:
            with _untrusted():
                found = self.record.lines(EVENTS, start=offset, limit=1)
            if found.problems or any(e.get("kind") != "control" for e in found.entries):
                return True  # an event or a damaged line (control requests are not ours)
            if not found.entries:  # (a cursor past the end, emptied, reads from the start)
                return False
            offset = found.end

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

        A look every 25 ms: cheap, and well inside the 100 ms delivery target.
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
        seen = set(cursor.seen)
        events: list[Event] = []
        problems: list[str] = []
        duplicates = 0
        offset = cursor.offset
        while len(events) < max_events:
            with _untrusted():
                found = self.record.lines(EVENTS, start=offset, limit=max_events - len(events))
            problems.extend(found.problems)
            for data in found.entries:
                if data.get("kind") == "control":
                    continue  # a request for the job's supervisor (store/control.py)
                event, bad = event_from_dict(data)
                if bad is not None or event is None:
                    problems.append(f"{self.events_path}: {bad}")
                elif event.owner != self.owner:
                    problems.append(f"event {event.id!r} is for {event.owner!r}; skipped")
                elif event.id in seen:
                    duplicates += 1
                else:
                    seen.add(event.id)
                    events.append(event)
            if found.end == offset:
                break
            offset = found.end
        return Batch(tuple(events), offset, tuple(problems), duplicates)

    def _ack_locked(self, batch: Batch) -> None:
        cursor = self._read_cursor()
        if batch.end_offset <= cursor.offset and not batch.events:
            return
        cursor.offset = max(cursor.offset, batch.end_offset)
        cursor.seen = (cursor.seen + list(batch.ids))[-self.seen_cap :]
        with _untrusted():
            size = self.record.size(EVENTS)
            if cursor.offset >= size >= COMPACT_BYTES and may_empty(self.record):
                # Everything was delivered: empty the log (producers wait on the same lock).
                self.record.trim(EVENTS, 0)
                cursor.offset = 0
        self._write_cursor(cursor)

    def _read_cursor(self) -> _Cursor:
        try:
            data = self.record.read(CURSOR)
        except (StoreError, OSError):
            data = None
        offset = data.get("offset") if data is not None else None
        seen = data.get("seen") if data is not None else None
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
        with _untrusted():
            self.record.replace(CURSOR, {"offset": cursor.offset, "seen": cursor.seen})

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """The owner's lock (appends, cursor, timers); re-entrant within this thread."""
        with contextlib.ExitStack() as stack:
            with _untrusted():
                stack.enter_context(self.record.locked())
            yield


def _bounded_details(details: Mapping[str, Any]) -> dict[str, Any]:
    text = json.dumps(dict(details), default=str)
    return json.loads(text) if len(text) <= MAX_DETAILS_BYTES else {"truncated": True}
