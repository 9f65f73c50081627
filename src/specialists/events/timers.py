"""One owner's timers: an append-only record file folded into pending / fired / cancelled.

    {"op": "set", "id": "tm-…", "due_ms": …, "created_ms": …, "note": …, "source": {…}}
    {"op": "fire", "id": "tm-…", "at_ms": …}
    {"op": "cancel", "id": "tm-…", "at_ms": …}

Every change is written before it is reported (R-T7): a set that could not be written is an
error, never a timer that silently will not fire; a cancel that could not be written is an
error, never a success. All changes and firing take the owner's lock, the same one its inbox
uses, so firing a timer and recording that it fired happen together. Past COMPACT_BYTES the
file is rewritten to what still matters, so it never outgrows what a read takes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from specialists.base.errors import StoreError, UserError
from specialists.base.tuples import NamedTuple
from specialists.events.inbox import Inbox
from specialists.events.model import Event, EventSource

TIMERS = "timers"  # the owner record's log timers.jsonl (store/kinds.py OWNER)
TIMERS_FILE = "timers.jsonl"
MAX_PENDING = 32  # timers.max in seed 001
MAX_SLEEP_S = 604_800  # a week (R-T: sleep takes 1 to 604800 seconds)
LATE_AFTER_MS = 1000  # fired later than this past its due time: say so
MAX_NOTE = 500
# Past this the log is compacted to the records of pending timers and of the last KEEP_DONE
# done ones: an agent that sleeps in a loop appends forever, and a log past the owner's read
# bound (store/kinds.py OWNER) would hide every timer set after it, which would never fire.
COMPACT_BYTES = 1 << 20
KEEP_DONE = 100  # fired or cancelled timers kept through a compaction (list --all, cancel)

TimerState = Literal["pending", "fired", "cancelled"]


class Timer(NamedTuple):
    id: str
    due_ms: int
    created_ms: int
    note: str = ""
    source: EventSource = EventSource("sleep")
    state: TimerState = "pending"
    done_at_ms: int | None = None


class Fold(NamedTuple):
    timers: dict[str, Timer]
    problems: tuple[str, ...]

    def pending(self) -> list[Timer]:
        return sorted(
            (t for t in self.timers.values() if t.state == "pending"),
            key=lambda t: (t.due_ms, t.id),
        )


class CancelOutcome(NamedTuple):
    id: str
    state: TimerState  # the state after the call: cancelled now, or already fired/cancelled
    changed: bool


class TimerStore:
    def __init__(
        self,
        state_root: Path,
        owner: str,
        *,
        max_pending: int = MAX_PENDING,
        inbox: Inbox | None = None,
    ) -> None:
        self.inbox = inbox if inbox is not None else Inbox(state_root, owner)
        self.owner = self.inbox.owner
        self.record = self.inbox.record
        self.path = self.inbox.dir / TIMERS_FILE
        self.max_pending = max_pending

    # --- reading --------------------------------------------------------------------------

    def fold(self) -> Fold:
        """Every timer as its records left it. Raises OSError for a planted file."""
        timers: dict[str, Timer] = {}
        try:
            found = self.record.lines(TIMERS)
        except StoreError as exc:
            raise OSError(exc.message) from None
        problems = list(found.problems)
        for n, record in enumerate(found.entries, 1):
            problem = _apply(timers, record)
            if problem:
                problems.append(f"{self.path} record {n}: {problem}")
        return Fold(timers, tuple(problems))

    def pending(self) -> list[Timer]:
        return self.fold().pending()

    def next_due_ms(self) -> int | None:
        pending = self.pending()
        return pending[0].due_ms if pending else None

    # --- changing -------------------------------------------------------------------------

    def set(self, due_ms: int, *, now_ms: int, note: str = "", source: EventSource) -> Timer:
        """Register a timer (due in the past fires at the next look). Refused at the cap."""
        with self.inbox.locked():
            fold = self.fold()
            pending = fold.pending()
            if len(pending) >= self.max_pending:
                listed = ", ".join(f"{t.id} ({t.note or 'no note'})" for t in pending[:10])
                raise UserError(
                    f"too many pending timers ({len(pending)} of {self.max_pending}): {listed}",
                    hint="cancel one with timer_cancel, or wait for one to fire",
                )
            timer = Timer(
                id=_fresh_id(fold.timers),
                due_ms=int(due_ms),
                created_ms=now_ms,
                note=note[:MAX_NOTE],
                source=source,
            )
            self._write(
                {
                    "op": "set",
                    "id": timer.id,
                    "due_ms": timer.due_ms,
                    "created_ms": now_ms,
                    "note": timer.note,
                    "source": source.to_dict(),
                }
            )
        return timer

    def cancel(self, timer_id: str, *, now_ms: int) -> CancelOutcome:
        with self.inbox.locked():
            timer = self.fold().timers.get(timer_id)
            if timer is None:
                raise UserError(f"no timer {str(timer_id)[:40]!r}", hint="see timer list")
            if timer.state != "pending":
                return CancelOutcome(timer.id, timer.state, changed=False)
            self._write({"op": "cancel", "id": timer.id, "at_ms": now_ms})
        return CancelOutcome(timer.id, "cancelled", changed=True)

    def cancel_all(self, *, now_ms: int) -> list[CancelOutcome]:
        with self.inbox.locked():
            return [self.cancel(t.id, now_ms=now_ms) for t in self.pending()]

    def fire_due(self, now_ms: int) -> list[Event]:
        """Fire every pending timer whose time has come: one `timer` event each, in due order."""
        try:
            if not self.record.size(TIMERS):
                return []
        except StoreError as exc:
            raise OSError(exc.message) from None
        fired: list[Event] = []
        with self.inbox.locked():
            for timer in self.fold().pending():
                if timer.due_ms > now_ms:
                    break
                late_ms = now_ms - timer.due_ms
                body = f"Timer {timer.id} fired"
                body += f": {timer.note}" if timer.note else "."
                if late_ms > LATE_AFTER_MS:
                    body += f" (late by {late_ms // 1000} s)"
                event = self.inbox.append(
                    "timer",
                    timer.source,
                    body,
                    source_id=timer.id,
                    seq=1,
                    details={"timer_id": timer.id, "due_ms": timer.due_ms, "late_ms": late_ms},
                    ts_ms=now_ms,
                )
                self._write({"op": "fire", "id": timer.id, "at_ms": now_ms})
                fired.append(event)
        return fired

    # --- internals ------------------------------------------------------------------------

    def _write(self, record: dict[str, Any]) -> None:
        """Append one record (under the owner's lock), compacting a long log first."""
        try:
            if self.record.size(TIMERS) > COMPACT_BYTES:
                self._compact()
            self.record.append(TIMERS, record)
        except StoreError as exc:
            raise OSError(exc.message) from None

    def _compact(self) -> None:
        found = self.record.lines(TIMERS)
        timers: dict[str, Timer] = {}
        for entry in found.entries:
            _apply(timers, entry)
        done = sorted(
            (t for t in timers.values() if t.state != "pending"), key=lambda t: t.done_at_ms or 0
        )
        keep = {t.id for t in timers.values() if t.state == "pending"}
        keep.update(t.id for t in done[-KEEP_DONE:])
        self.record.rewrite(TIMERS, [e for e in found.entries if e.get("id") in keep])


def _fresh_id(existing: dict[str, Timer]) -> str:
    # 48 random bits, checked against every id this owner still has on record (R-T7: never
    # reused; an id a compaction forgot is as unlikely to be drawn again as any other).
    while True:
        timer_id = "tm-" + os.urandom(6).hex()
        if timer_id not in existing:
            return timer_id


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _apply(timers: dict[str, Timer], record: object) -> str | None:
    """Fold one record in; a reason when it is malformed (then it changes nothing)."""
    if not isinstance(record, dict):
        return "not an object"
    op, timer_id = record.get("op"), record.get("id")
    if not isinstance(timer_id, str) or not timer_id.startswith("tm-") or len(timer_id) > 40:
        return "bad id"
    if op == "set":
        due, created, note = (
            _int(record.get("due_ms")),
            _int(record.get("created_ms")),
            record.get("note", ""),
        )
        raw_source = record.get("source", {})
        if due is None or created is None or not isinstance(note, str):
            return "bad set record"
        source = EventSource("sleep")
        if isinstance(raw_source, dict) and isinstance(raw_source.get("tool"), str):
            args = raw_source.get("args", {})
            call_id = raw_source.get("call_id", "")
            source = EventSource(
                raw_source["tool"],
                call_id if isinstance(call_id, str) else "",
                args if isinstance(args, dict) else {},
            )
        if timer_id in timers:
            return "id set twice"
        timers[timer_id] = Timer(timer_id, due, created, note, source)
        return None
    if op in ("fire", "cancel"):
        timer = timers.get(timer_id)
        at = _int(record.get("at_ms"))
        if timer is None or at is None:
            return f"{op} of an unknown timer"
        if timer.state == "pending":
            state: TimerState = "fired" if op == "fire" else "cancelled"
            timers[timer_id] = timer._replace(state=state, done_at_ms=at)
        return None
    return f"unknown op {str(op)[:20]!r}"
