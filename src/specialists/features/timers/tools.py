"""sleep, sleep_until, sleep_until_event, timer_cancel (R-T1..R-T7) on the timers room."""

from __future__ import annotations

from specialists.base.errors import UserError
from specialists.events.model import EventSource
from specialists.events.timers import MAX_NOTE, MAX_SLEEP_S, TimerStore
from specialists.events.zone import wall_time_to_epoch
from specialists.native.agent_tools import (
    AgentTool,
    Reply,
    ToolCall,
    arg_bool,
    arg_number,
    arg_str,
    check_known,
)

WAKE = "The wake-up arrives as a [specialists event] timer message; end your turn now."


def _store(call: ToolCall) -> TimerStore:
    c = call.caller
    return TimerStore(c.state_root, c.owner, max_pending=c.settings.timers.max)


def _source(call: ToolCall, tool: str) -> EventSource:
    return EventSource(tool, call.call_id, dict(call.args))


def sleep(call: ToolCall) -> Reply:
    check_known(call.args, {"seconds", "note"})
    seconds = arg_number(call.args, "seconds", low=1, high=MAX_SLEEP_S)
    assert seconds is not None
    note = arg_str(call.args, "note", required=False, max_len=MAX_NOTE)
    now = call.caller.clock()
    timer = _store(call).set(
        int((now + seconds) * 1000),
        now_ms=int(now * 1000),
        note=note,
        source=_source(call, "sleep"),
    )
    return Reply(
        f"Timer {timer.id} set for {seconds:g} s. {WAKE}",
        {"timer_id": timer.id, "due_ms": timer.due_ms},
        yields=True,
    )


def sleep_until(call: ToolCall) -> Reply:
    check_known(call.args, {"date", "time", "timezone", "note"})
    target = wall_time_to_epoch(
        arg_str(call.args, "date", max_len=20),
        arg_str(call.args, "time", max_len=20),
        arg_str(call.args, "timezone", max_len=64),
    )
    note = arg_str(call.args, "note", required=False, max_len=MAX_NOTE)
    now = call.caller.clock()
    if target - now > MAX_SLEEP_S * 52 * 10:  # ten years: surely a typo
        raise UserError("sleep_until target is more than ten years away")
    due_s = max(target, now)  # a past target fires at once (R-T1)
    timer = _store(call).set(
        int(due_s * 1000), now_ms=int(now * 1000), note=note, source=_source(call, "sleep_until")
    )
    past = " The target is in the past, so it fires at once." if target <= now else ""
    return Reply(
        f"Timer {timer.id} set for {call.args['date']} {call.args['time']} "
        f"{call.args['timezone']}.{past} {WAKE}",
        {"timer_id": timer.id, "due_ms": timer.due_ms},
        yields=True,
    )


def sleep_until_event(call: ToolCall) -> Reply:
    check_known(call.args, {"note"})
    arg_str(call.args, "note", required=False, max_len=MAX_NOTE)
    return Reply(
        "Waiting for the next event (a job exit, a watched line, a timer, a child's report, "
        "or the user). End your turn now.",
        yields=True,
    )


def timer_cancel(call: ToolCall) -> Reply:
    check_known(call.args, {"id", "all"})
    store, now_ms = _store(call), int(call.caller.clock() * 1000)
    if arg_bool(call.args, "all"):
        if "id" in call.args:
            raise UserError("give either id or all, not both")
        outcomes = store.cancel_all(now_ms=now_ms)
        return Reply(
            f"Cancelled {len(outcomes)} pending timer(s).",
            {"cancelled": [o.id for o in outcomes]},
        )
    outcome = store.cancel(arg_str(call.args, "id", max_len=40), now_ms=now_ms)
    said = "cancelled" if outcome.changed else f"already {outcome.state}; nothing changed"
    return Reply(f"Timer {outcome.id}: {said}.", {"id": outcome.id, "state": outcome.state})


_NOTE = {"type": "string", "description": "Why you are waiting; shown when the timer fires."}

TIMER_TOOLS = (
    AgentTool(
        "sleep",
        "Wait without blocking: sets a durable timer and ends your turn at once. You are woken "
        "by a [specialists event] timer message when it fires (it fires even after a restart; "
        "a late one says how late). Use it instead of `sleep` in bash. Other events (a "
        "background command exiting, a child reporting, the user) can wake you earlier; the "
        "timer still fires later unless you cancel it with timer_cancel. seconds: 1 to 604800.",
        {
            "type": "object",
            "properties": {
                "seconds": {"type": "number", "minimum": 1, "maximum": 604800},
                "note": _NOTE,
            },
            "required": ["seconds"],
            "additionalProperties": False,
        },
        sleep,
        guidance=(
            "To wait, use sleep or sleep_until_event and end your turn; never sleep in bash or "
            "poll in a loop."
        ),
    ),
    AgentTool(
        "sleep_until",
        "Wait until a wall-clock time in an IANA time zone (e.g. 2026-12-24, 09:00, "
        "Europe/Berlin), without blocking: sets a durable timer and ends your turn. A time in a "
        "DST gap moves forward; one that occurs twice means the earlier. A past time fires at "
        "once. The wake-up is a [specialists event] timer message.",
        {
            "type": "object",
            "properties": {
                "date": {"type": "string", "description": "YYYY-MM-DD"},
                "time": {"type": "string", "description": "HH:MM or HH:MM:SS"},
                "timezone": {"type": "string", "description": "IANA zone, e.g. UTC"},
                "note": _NOTE,
            },
            "required": ["date", "time", "timezone"],
            "additionalProperties": False,
        },
        sleep_until,
    ),
    AgentTool(
        "sleep_until_event",
        "End your turn and wait for the next event: a background command exiting or printing a "
        "watched line, a timer, a child thread's report, or a user message. Registers nothing. "
        "Use it after dispatching work you need the result of. Never invent the results of work "
        "you started and have not seen.",
        {"type": "object", "properties": {"note": _NOTE}, "additionalProperties": False},
        sleep_until_event,
    ),
    AgentTool(
        "timer_cancel",
        "Cancel a pending timer by id, or every pending timer with all: true. Cancelling a "
        "timer that already fired or was cancelled changes nothing and says so.",
        {
            "type": "object",
            "properties": {"id": {"type": "string"}, "all": {"type": "boolean"}},
            "additionalProperties": False,
        },
        timer_cancel,
    ),
)
