"""The timer ops (R-T1..R-T7; base/ops.py): the agent tools sleep, sleep_until,
sleep_until_event and timer_cancel, and `specialists timer set|list|cancel` for people, on the
timers that live with the inboxes they fire into (events/timers.py). One set of rules: 1 to
604,800 seconds, IANA zones with DST gaps and overlaps, at most timers.max pending, ids never
reused; a timer fires into its owner's inbox.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Any

from specialists.base.errors import UserError
from specialists.base.ops import Noun, Op
from specialists.base.opschema import Range, Text
from specialists.base.tuples import NamedTuple
from specialists.events.model import EventSource
from specialists.events.timers import MAX_NOTE, MAX_SLEEP_S, Timer, TimerStore
from specialists.events.zone import wall_time_to_epoch

if TYPE_CHECKING:
    from specialists.native.agent_tools import Caller

WAKE = "The wake-up arrives as a [specialists event] timer message; end your turn now."
Note = Annotated[str, Text(MAX_NOTE, line=False)]
Span = Annotated[float, Range(1, MAX_SLEEP_S)]


def _store(caller: Caller) -> TimerStore:
    return TimerStore(caller.state_root, caller.owner, max_pending=caller.settings.timers.max)


class Set(NamedTuple):
    """A timer an agent set; `said` is how its text names the time."""

    timer_id: str
    due_ms: int
    said: str

    def to_dict(self) -> dict[str, Any]:
        return {"timer_id": self.timer_id, "due_ms": self.due_ms}


def _set(caller: Caller, due_s: float, note: str, tool: str, args: dict[str, Any]) -> Timer:
    now = caller.clock()
    source = EventSource(tool, caller.call_id or ("cli" if caller.person else ""), args)
    return _store(caller).set(int(due_s * 1000), now_ms=int(now * 1000), note=note, source=source)


def _wall(caller: Caller, date: str, at: str, zone: str) -> tuple[float, bool]:
    """(the due instant, whether it is already past) of a wall-clock time in a zone."""
    target = wall_time_to_epoch(date, at, zone)
    now = caller.clock()
    if target - now > MAX_SLEEP_S * 52 * 10:  # ten years: surely a typo
        raise UserError("sleep_until target is more than ten years away")
    return max(target, now), target <= now  # a past target fires at once (R-T1)


def sleep(caller: Caller, *, seconds: Span, note: Note = "") -> Set:
    """Wait without blocking: sets a durable timer and ends your turn at once. You are woken
    by a [specialists event] timer message when it fires (it fires even after a restart; a
    late one says how late). Use it instead of `sleep` in bash. Other events (a background
    command exiting, a child reporting, the user) can wake you earlier; the timer still fires
    later unless you cancel it with timer_cancel. seconds: 1 to 604800.

    Args:
        note: Why you are waiting; shown when the timer fires.
    """
    shown = int(seconds) if float(seconds).is_integer() else seconds  # as the agent wrote it
    args = {"seconds": shown, **({"note": note} if note else {})}
    timer = _set(caller, caller.clock() + seconds, note, "sleep", args)
    return Set(timer.id, timer.due_ms, f"for {seconds:g} s.")


def sleep_until(
    caller: Caller,
    *,
    date: Annotated[str, Text(20)],
    time: Annotated[str, Text(20)],
    timezone: Annotated[str, Text(64)],
    note: Note = "",
) -> Set:
    """Wait until a wall-clock time in an IANA time zone (e.g. 2026-12-24, 09:00,
    Europe/Berlin), without blocking: sets a durable timer and ends your turn. A time in a
    DST gap moves forward; one that occurs twice means the earlier. A past time fires at
    once. The wake-up is a [specialists event] timer message.

    Args:
        date: YYYY-MM-DD
        time: HH:MM or HH:MM:SS
        timezone: IANA zone, e.g. UTC
        note: Why you are waiting; shown when the timer fires.
    """
    due, past = _wall(caller, date, time, timezone)
    args = {"date": date, "time": time, "timezone": timezone, **({"note": note} if note else {})}
    timer = _set(caller, due, note, "sleep_until", args)
    said = f"for {date} {time} {timezone}."
    said += " The target is in the past, so it fires at once." if past else ""
    return Set(timer.id, timer.due_ms, said)


def sleep_until_event(caller: Caller, *, note: Note = "") -> dict[str, Any]:
    """End your turn and wait for the next event: a background command exiting or printing a
    watched line, a timer, a child thread's report, or a user message. Registers nothing.
    Use it after dispatching work you need the result of. Never invent the results of work
    you started and have not seen.

    Args:
        note: Why you are waiting; shown when the timer fires.
    """
    return {}


def set_timer(
    caller: Caller,
    seconds: str | None = None,
    /,
    *,
    date: Annotated[str | None, Text(20)] = None,
    time: Annotated[str | None, Text(20)] = None,
    zone: Annotated[str | None, Text(64)] = None,
    note: Note = "",
) -> dict[str, Any]:
    """Set a timer: in SECONDS, or at a date, time and zone.

    Args:
        seconds: seconds from now (1 to 604800)
        date: YYYY-MM-DD (with time and zone)
        time: HH:MM or HH:MM:SS
        zone: IANA time zone, e.g. Europe/Berlin or UTC
        note: shown when it fires
    """
    wall = (date, time, zone)
    if seconds is not None:
        if any(wall):
            raise UserError("give SECONDS or --date/--time/--zone, not both")
        try:
            span = float(seconds)
        except ValueError:
            raise UserError(
                f"invalid seconds {seconds[:40]!r}", hint="a number from 1 to 604800"
            ) from None
        if span != span:
            raise UserError(f"seconds must be a number, got {seconds[:40]!r}")
        if not 1 <= span <= MAX_SLEEP_S:
            raise UserError(f"seconds must be from 1 to {MAX_SLEEP_S:g}; got {seconds[:40]}")
        timer = _set(caller, caller.clock() + span, note, "sleep", {"seconds": span})
    elif date and time and zone:
        due, _ = _wall(caller, date, time, zone)
        args = {"date": date, "time": time, "timezone": zone}
        timer = _set(caller, due, note, "sleep_until", args)
    else:
        raise UserError(
            "a timer needs SECONDS, or all of --date, --time and --zone",
            hint="e.g. specialists timer set 90, or --date 2026-12-24 --time 09:00 --zone UTC",
        )
    return {"id": timer.id, "due_ms": timer.due_ms, "note": note}


def cancel(
    caller: Caller, id: Annotated[str | None, Text(40)] = None, /, *, all: bool = False
) -> dict[str, Any]:
    """Cancel a pending timer by id, or every pending timer with all: true. Cancelling a
    timer that already fired or was cancelled changes nothing and says so.

    Args:
        id: timer id (tm-...)
        all: every pending timer of the owner
    """
    if all == (id is not None):
        raise UserError("give a timer id or --all", hint="see: specialists timer list")
    store, now_ms = _store(caller), int(caller.clock() * 1000)
    if all:
        return {"cancelled": [o.id for o in store.cancel_all(now_ms=now_ms)]}
    outcome = store.cancel(id or "", now_ms=now_ms)
    return {"id": outcome.id, "state": outcome.state, "changed": outcome.changed}


def listing(caller: Caller, *, all: bool = False) -> dict[str, Any]:
    """Pending timers (fires what is due first).

    Args:
        all: also fired and cancelled ones
    """
    store = _store(caller)
    store.fire_due(int(time.time() * 1000))  # a front that looks fires what is due
    fold = store.fold()
    caller.warnings.extend(fold.problems)
    timers = list(fold.timers.values()) if all else fold.pending()
    timers.sort(key=lambda t: (t.due_ms, t.id))
    return {"owner": caller.owner, "timers": [timer_dict(t) for t in timers]}


def timer_dict(t: Timer) -> dict[str, Any]:
    return {
        "id": t.id,
        "due_ms": t.due_ms,
        "state": t.state,
        "note": t.note,
        "created_ms": t.created_ms,
        "done_at_ms": t.done_at_ms,
    }


def _said_set(made: Set) -> str:
    return f"Timer {made.timer_id} set {made.said} {WAKE}"


def said_cancel(data: dict[str, Any]) -> str:
    if "cancelled" in data:
        return f"Cancelled {len(data['cancelled'])} pending timer(s)."
    said = "cancelled" if data["changed"] else f"already {data['state']}; nothing changed"
    return f"Timer {data['id']}: {said}."


def _waiting(_: object) -> str:
    return (
        "Waiting for the next event (a job exit, a watched line, a timer, a child's report, "
        "or the user). End your turn now."
    )


_SLEEP = (
    "To wait, use sleep or sleep_until_event and end your turn; never sleep in bash or poll "
    "in a loop."
)
TIMER = Noun(
    "timer",
    "set, list or cancel durable timers",
    (
        Op(sleep, tool="sleep", cli=False, power="", text=_said_set, yields=True, guidance=_SLEEP),
        Op(sleep_until, tool="sleep_until", cli=False, power="", text=_said_set, yields=True),
        Op(sleep_until_event, tool="sleep_until_event", cli=False, power="", text=_waiting,
           yields=True),
        Op(cancel, "cancel", tool="timer_cancel", power="", text=said_cancel, owner=True),
        Op(set_timer, "set", owner=True),
        Op(listing, "list", reads=True, owner=True),
    ),
)  # fmt: skip
