"""One line for people: a status row, a feed line, an event's detail (the CLI, `top`, `web`).

Plain text, no rich: the output is often read by agents. Everything here that carries agent
text goes through `display_line`: one line, clipped, terminal escapes made visible.
"""

from __future__ import annotations

import json
from typing import Any

from specialists.base.display import display_line, duration
from specialists.store.records import JobStatus
from specialists.store.view import doing, elapsed_s

clip = display_line  # the commands' name for it: one safe line of at most N characters


def status_line(st: JobStatus) -> str:
    if st.status == "done":
        what = "✓"
    elif st.status == "error":
        what = f"✗ {st.error or ''}"
    else:
        what = doing(st)
        if st.status == "running" and st.current_tool:
            what = f"tool: {what}"
        if st.stalled:
            what = "STALLED " + what
    return (
        f"  {st.id}  {clip(st.specialist, 14):<14} {st.status:<9} "
        f"{duration(elapsed_s(st)):>6}  {clip(what, 60)}"
    )


FEED_NAMES = {"tool_execution_end": "tool_end", "tool_execution": "tool"}


def _int(value: Any, default: int) -> int:
    """An event field that should be a number (events.jsonl is untrusted input)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def feed_line(job_id: str, specialist: str, started_ms: int, ev: dict[str, Any]) -> str:
    kind = str(ev.get("event", "?"))
    offset = max(0, (_int(ev.get("ts"), started_ms) - started_ms) // 1000)
    clock = f"{offset // 60:02d}:{offset % 60:02d}"
    return (
        f"[{job_id}] {clip(specialist, 12):<12} {clock}  "
        f"{clip(FEED_NAMES.get(kind, kind), 30):<11} {event_detail(ev)}"
    ).rstrip()


def event_detail(ev: dict[str, Any]) -> str:
    kind = ev.get("event")
    if kind == "toolcall":
        return clip(str(ev.get("tool", "")) + _args(ev), 100)
    if kind == "tool_execution":
        return clip(ev.get("tool", ""), 100)
    if kind == "tool_execution_end":
        ms = ev.get("duration_ms")
        secs = f"  {ms / 1000:.1f}s" if isinstance(ms, int | float) else ""
        err = "  error" if ev.get("is_error") else ""
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
    skip = {"seq", "ts", "event", "call_id"}
    rest = " ".join(f"{k}={_value(v)}" for k, v in ev.items() if k not in skip)
    return clip(rest, 100)


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
