"""Compact dicts for the orchestrator's context: a job, a job list, events, a result.

An orchestrator pays for every byte it reads, so these carry only what a decision needs:
no timestamps in ms, no pids, no nulls. Long text is clipped with its size noted.
"""

from __future__ import annotations

from typing import Any

from specialists.base.display import one_line
from specialists.store.records import JobStatus
from specialists.store.view import doing, elapsed_s, is_paused, outcome_counts

RECENT_FINISHED = 3
EVENT_FIELD_CHARS = 200
ERROR_CHARS = 300
DOING_CHARS = 80
RESULT_CHARS = 60_000
_DROPPED_EVENT_FIELDS = frozenset({"ts", "id", "specialist", "session_file"})


def clip(text: str, limit: int) -> str:
    """Short fields become one line; long ones (answers) keep their lines, cut at `limit`."""
    if limit <= ERROR_CHARS:
        return one_line(text, limit)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def job_brief(st: JobStatus) -> dict[str, Any]:
    """One job in a few dozen bytes: id, specialist, status, elapsed, and what matters now."""
    out: dict[str, Any] = {
        "id": st.id,
        "specialist": st.specialist,
        "status": st.status,
        "elapsed_s": elapsed_s(st),
    }
    now_doing = doing(st) if st.status in ("starting", "running") or st.paused_until_ms else ""
    if now_doing:
        out["doing"] = clip(now_doing, DOING_CHARS)
    if is_paused(st):
        out["paused"] = True
    if st.stalled:
        out["stalled"] = True
    if st.needs_attention:
        out["needs_attention"] = clip(st.needs_attention, ERROR_CHARS)
    if st.error and st.status != "done":
        out["error"] = clip(st.error, ERROR_CHARS)
    return out


def job_detail(st: JobStatus) -> dict[str, Any]:
    """`job_brief` plus the counters someone looking at one job wants."""
    out = job_brief(st)
    out["events"] = st.events
    if st.tool_calls:
        out["tool_calls"] = st.tool_calls
    if st.model:
        out["model"] = st.model
    if st.cost_usd:
        out["cost_usd"] = round(st.cost_usd, 4)
    if st.parent_id:
        out["continues"] = st.parent_id
    if st.ceilings:  # each spend ceiling it counts against, as last counted
        out["ceilings"] = st.ceilings
    return out


def job_list(statuses: list[JobStatus]) -> dict[str, Any]:
    """Active jobs in full, finished ones as counts plus the few most recent."""
    ordered = sorted(statuses, key=lambda s: s.started_at_ms, reverse=True)
    active = [job_brief(s) for s in ordered if s.active]
    finished = [s for s in ordered if not s.active]
    return {
        "active": active,
        "finished": outcome_counts(finished),
        "recent": [job_brief(s) for s in finished[:RECENT_FINISHED]],
    }


def compact_event(event: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in event.items():
        if key in _DROPPED_EVENT_FIELDS or value is None:
            continue
        out[key] = clip(value, EVENT_FIELD_CHARS) if isinstance(value, str) else value
    return out


def bounded_result(text: str, path: object, limit: int = RESULT_CHARS) -> tuple[str, bool]:
    """The result text, or its head plus where the rest is. (text, truncated)."""
    if len(text) <= limit:
        return text, False
    rest = len(text) - limit
    return text[:limit] + f"\n…[{rest} more characters; full text in {path}]", True


def breakers() -> list[dict[str, Any]]:
    """The native providers' circuit breakers, for specialist_status."""
    try:
        from specialists.native.breaker import breaker_health
    except ImportError as exc:
        return [{"key": "?", "state": "unknown", "last_error": f"breakers unavailable: {exc}"}]
    out = []
    for item in breaker_health():
        entry = {"key": str(item.get("key")), "state": str(item.get("state", "?"))}
        if item.get("failures"):
            entry["failures"] = item["failures"]
        if item.get("last_error"):
            entry["last_error"] = clip(str(item["last_error"]), 200)
        out.append(entry)
    return out
