"""Plain-text rendering shared by the commands (no rich: output is often read by agents)."""

from __future__ import annotations

import json
import time
from typing import Any

from specialists.jobs.records import JobStatus


def duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"


def live_elapsed(st: JobStatus) -> float:
    if st.active and st.started_at_ms:
        return time.time() - st.started_at_ms / 1000
    return st.elapsed_s


def clip(text: str | None, width: int) -> str:
    text = (text or "").replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


def status_line(st: JobStatus) -> str:
    if st.status == "running":
        what = f"tool: {st.current_tool}" if st.current_tool else (st.current_event or "")
        if st.stalled:
            what = "STALLED " + what
    elif st.status == "waiting":
        what = "waiting for follow-up"
    elif st.status == "done":
        what = "✓"
    elif st.status == "error":
        what = f"✗ {st.error or ''}"
    else:
        what = st.current_event or ""
    return (
        f"  {st.id}  {clip(st.specialist, 14):<14} {st.status:<9} "
        f"{duration(live_elapsed(st)):>6}  {clip(what, 60)}"
    )


FEED_NAMES = {"tool_execution_end": "tool_end", "tool_execution": "tool"}


def feed_line(job_id: str, specialist: str, started_ms: int, ev: dict[str, Any]) -> str:
    kind = str(ev.get("event", "?"))
    offset = max(0, (int(ev.get("ts", started_ms)) - started_ms) // 1000)
    clock = f"{offset // 60:02d}:{offset % 60:02d}"
    return (
        f"[{job_id}] {clip(specialist, 12):<12} {clock}  "
        f"{FEED_NAMES.get(kind, kind):<11} {event_detail(ev)}"
    ).rstrip()


def event_detail(ev: dict[str, Any]) -> str:
    kind = ev.get("event")
    if kind == "toolcall":
        return clip(str(ev.get("tool", "")) + _args(ev), 100)
    if kind == "tool_execution":
        return str(ev.get("tool", ""))
    if kind == "tool_execution_end":
        ms = ev.get("duration_ms")
        secs = f"  {ms / 1000:.1f}s" if isinstance(ms, int | float) else ""
        err = "  error" if ev.get("is_error") else ""
        return f"{ev.get('tool', '')}{secs}{err}"
    if kind in ("done", "cancelled"):
        ms = ev.get("duration_ms")
        return f"{ms / 1000:.1f}s" if isinstance(ms, int | float) else ""
    if kind == "error":
        return clip(str(ev.get("error", "")), 120)
    if kind == "starting":
        return clip(f"{ev.get('runner', '')} {ev.get('model') or ''}", 80)
    if kind in ("steer_ack", "follow_up_ack", "stop_ack", "abort_ack"):
        ok = "delivered" if ev.get("delivered") else f"failed: {ev.get('reason', '')}"
        return ("queued" if ev.get("queued") else ok) + f" ({ev.get('request', '')})"
    if kind == "turn_end":
        return _turn_detail(ev)
    skip = {"seq", "ts", "event", "call_id"}
    rest = " ".join(f"{k}={_value(v)}" for k, v in ev.items() if k not in skip)
    return clip(rest, 100)


def _turn_detail(ev: dict[str, Any]) -> str:
    parts = [f"turn {ev['turn']}"] if "turn" in ev else []
    usage = ev.get("usage")
    if isinstance(usage, dict):
        parts.append(f"in={usage.get('input', 0)} out={usage.get('output', 0)}")
        if usage.get("cost_usd"):
            parts.append(f"${usage['cost_usd']:.4f}")
    if ev.get("tool_calls"):
        parts.append(f"{ev['tool_calls']} tool call(s)")
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
