"""One line for people: a status row, a feed line, an event's detail (the CLI, `top`, `web`).

Plain text, no rich: the output is often read by agents. Everything here that carries agent
text goes through `display_line`: one line, clipped, terminal escapes made visible.
"""

from __future__ import annotations

import json
import time

from specialists.base.display import clock_time, display_line, duration
from specialists.store.records import JobStatus
from specialists.store.view import doing, elapsed_s, name_of

TYPE_CHECKING = False  # no `typing` at run time: `status` and `feed` read this
if TYPE_CHECKING:
    from typing import Any

clip = display_line  # the commands' name for it: one safe line of at most N characters


def status_line(st: JobStatus) -> str:
    if st.status == "done":
        what = "✓"
    elif st.status == "error":
        what = f"✗ {st.error or ''}"
    else:
        what = doing(st)
        if st.status == "running" and st.current_tool and not st.progress:
            what = f"tool: {what}"
        if st.stalled:
            what = "STALLED " + what
    title = st.title if st.title and not st.workflow_key else ""
    if title:
        what = f"{clip(title, 40)} · {what}"
    return (
        f"  {st.id}  {clip(name_of(st), 16):<16} {st.status:<9} "
        f"{duration(elapsed_s(st)):>6}  {clip(what, 90)}"
    )


# Event kinds as the feed's second column says them (`--json` keeps the kinds).
FEED_NAMES = {
    "text": "says",
    "toolcall": "tool",
    "tool_execution": "tool runs",
    "tool_execution_end": "tool done",
    "turn_end": "turn end",
    "run_end": "answered",
}


def feed_name(ev: dict[str, Any]) -> str:
    kind = str(ev.get("event", "?"))
    if kind == "tool_execution_end" and ev.get("is_error"):
        return "tool failed"
    return FEED_NAMES.get(kind, kind)


def _int(value: Any, default: int) -> int:
    """An event field that should be a number (events.jsonl is untrusted input)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def feed_line(job_id: str, name: str, started_ms: int, ev: dict[str, Any]) -> str:
    """`[job] name  mm:ss  kind  detail`; `name` is what the job is called (`name_of`)."""
    offset = max(0, (_int(ev.get("ts"), started_ms) - started_ms) // 1000)
    clock = f"{offset // 60:02d}:{offset % 60:02d}"
    return (
        f"[{job_id}] {clip(name, 20):<20} {clock}  {clip(feed_name(ev), 30):<11} {event_detail(ev)}"
    ).rstrip()


def event_detail(ev: dict[str, Any]) -> str:
    kind = ev.get("event")
    if kind == "text":
        return _words(ev)
    if kind == "toolcall":
        return clip(str(ev.get("tool", "")) + _args(ev), 100)
    if kind == "tool_execution":
        return clip(ev.get("tool", ""), 100)
    if kind == "tool_execution_end":
        ms = ev.get("duration_ms")
        secs = f"  {ms / 1000:.1f}s" if isinstance(ms, int | float) else ""
        why = ev.get("error")
        err = f"  {clip(why, 160)}" if isinstance(why, str) and why else ""
        if ev.get("is_error") and not err:
            err = "  error"
        return f"{clip(ev.get('tool', ''), 80)}{secs}{err}"
    if kind in ("done", "cancelled"):
        ms = ev.get("duration_ms")
        return f"{ms / 1000:.1f}s" if isinstance(ms, int | float) else ""
    if kind == "error":
        return clip(str(ev.get("error", "")), 120)
    if kind == "starting":
        return clip(f"{ev.get('runner', '')} {ev.get('model') or ''}", 80)
    if kind in ("steer_ack", "follow_up_ack", "stop_ack", "abort_ack"):
        ok = "delivered" if ev.get("delivered") else f"failed: {ev.get('reason', '')}"
        return clip(("queued" if ev.get("queued") else ok) + f" ({ev.get('request', '')})", 120)
    if kind == "turn_end":
        return _turn_detail(ev)
    if kind == "run_end":
        chars = _int(ev.get("chars"), 0)
        yielded = " (yielded: waiting for an event)" if ev.get("yielded") else ""
        return f"{chars:,} chars{yielded}"
    if kind == "spend":
        return _spend_detail(ev)
    if kind in ("usage_limit", "held"):
        return _limit_detail(ev)
    if kind == "usage_resumed":
        return "resumed early by a person" if ev.get("early") else "resumed: the limit reset"
    skip = {"seq", "ts", "event", "call_id"}
    message = ev.get("message")
    if kind == "notice" and isinstance(message, str):
        skip |= {"message", "workflow"}  # a workflow's notice says it in its message
        rest = " ".join(f"{k}={_value(v)}" for k, v in ev.items() if k not in skip)
        return clip(f"{message} {rest}", 140)
    rest = " ".join(f"{k}={_value(v)}" for k, v in ev.items() if k not in skip)
    return clip(rest, 100)


def _spend_detail(ev: dict[str, Any]) -> str:
    """A spend ceiling's event (features/spend): reached, or most of it used."""
    parts = []
    if isinstance(ev.get("cost_usd"), int | float):
        parts.append(f"${_number(ev.get('spent_usd')):.2f} of ${ev['cost_usd']:.2f}")
    if isinstance(ev.get("tokens"), int):
        parts.append(f"{_int(ev.get('spent_tokens'), 0):,} of {ev['tokens']:,} tokens")
    used = ev.get("used")
    state = "REACHED" if ev.get("reached") else f"{_number(used):.0%} used"
    return clip(f"ceiling {ev.get('ceiling')}: {state}: {', '.join(parts)}", 140)


def _limit_detail(ev: dict[str, Any]) -> str:
    """A usage limit met (`paused until 14:05: <what the agent said>`), or a start held."""
    at = _int(ev.get("resets_at_ms", ev.get("until_ms")), 0)
    when = clock_time(at, int(time.time() * 1000)) if at else "?"
    if ev.get("event") == "held":
        return clip(
            f"held until {when}: {ev.get('provider')}'s usage limit (job {ev.get('by')})", 140
        )
    return clip(f"{ev.get('provider')}: paused until {when}: {ev.get('error', '')}", 140)


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _words(ev: dict[str, Any]) -> str:
    """A `text` event: the agent's words (an excerpt), and how much more it said."""
    text = ev.get("text")
    if not isinstance(text, str):
        return ""
    shown = clip(text, 140)
    more = _int(ev.get("chars"), 0) - len(text)
    return f"{shown} (+{more:,} chars)" if more > 0 else shown


def _turn_detail(ev: dict[str, Any]) -> str:
    parts = [f"turn {clip(ev['turn'], 20)}"] if "turn" in ev else []
    usage = ev.get("usage")
    if isinstance(usage, dict):
        parts.append(f"in={clip(usage.get('input', 0), 20)} out={clip(usage.get('output', 0), 20)}")
        cost = usage.get("cost_usd")
        if isinstance(cost, int | float) and cost:
            parts.append(f"${cost:.4f}")
    if ev.get("tool_calls"):
        parts.append(f"{clip(ev['tool_calls'], 20)} tool call(s)")
    return " ".join(parts)


def _value(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), default=str)


def _args(ev: dict[str, Any]) -> str:
    args = ev.get("args")
    if not args:
        return ""
    text = str(args)
    return text if text.startswith("(") else f"({text})"
