"""The event record: one JSON line in an owner's inbox.

    {"id": "<source>:<kind>:<seq>", "kind": "job_exit", "owner": "job-1a2b3c4d",
     "ts": 1710000000000, "source": {"tool": "bg_run", "call_id": "...", "args": {...}},
     "body": "...", "details": {...}}

`body` is what the model reads (already bounded by spill.bound_body); `details` is
structured data for programs (exit code, paths, counts), never shown to the model whole.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from specialists.base.tuples import NamedTuple

# The kinds are a tuple at run time, the Literal only for type checkers
# (tests/unit/test_events.py keeps the two equal).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

    EventKind = Literal[
        "job_exit",  # a background command ended (R-J4)
        "job_match",  # lines matched a background command's watch patterns (R-J6)
        "timer",  # a timer fired (R-T1)
        "child_report",  # a child thread reported (R-H5)
        "child_closed",  # a child thread closed (R-H6)
        "notice",  # anything else the owner must hear of (a job ended, attention needed)
        "ask",  # a child asks its supervisor or reports progress (asks/, contact_supervisor)
        "control",  # a request to the job's supervisor (store/control.py), never delivered
    ]

EVENT_KINDS: tuple[str, ...] = (
    "job_exit",
    "job_match",
    "timer",
    "child_report",
    "child_closed",
    "notice",
    "ask",
    "control",
)

MAX_ARGS_CHARS = 300  # original_args shown to the model: one line, at most this long


class EventSource(NamedTuple):
    """The tool call (or other origin) an event answers."""

    tool: str
    call_id: str = ""
    args: Mapping[str, Any] = {}  # read-only (a Mapping): one shared empty one

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"tool": self.tool}
        if self.call_id:
            out["call_id"] = self.call_id
        if self.args:
            out["args"] = dict(self.args)
        return out


class Event(NamedTuple):
    id: str
    kind: EventKind
    owner: str
    ts_ms: int
    source: EventSource
    body: str
    details: Mapping[str, Any] = {}  # read-only, as args

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "owner": self.owner,
            "ts": self.ts_ms,
            "source": self.source.to_dict(),
            "body": self.body,
        }
        if self.details:
            out["details"] = dict(self.details)
        return out

    def to_line(self) -> bytes:
        text = json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"), default=str)
        return (text + "\n").encode("utf-8", "surrogatepass")


def event_id(source_id: str, kind: str, seq: int) -> str:
    """R-E1: `<source id>:<kind>:<seq>`."""
    return f"{source_id}:{kind}:{seq}"


def event_from_dict(data: object) -> tuple[Event | None, str | None]:
    """A decoded inbox line -> (event, None), or (None, what is wrong with it).

    Every field is checked: a damaged or foreign line is reported once and skipped, and the
    events after it are still delivered.
    """
    if not isinstance(data, dict):
        return None, "not a JSON object"
    problems = []
    eid, kind, owner, ts = data.get("id"), data.get("kind"), data.get("owner"), data.get("ts")
    body, details, source = data.get("body"), data.get("details", {}), data.get("source")
    if not isinstance(eid, str) or not eid or len(eid) > 512:
        problems.append("id")
    if kind not in EVENT_KINDS:
        problems.append("kind")
    if not isinstance(owner, str):
        problems.append("owner")
    if isinstance(ts, bool) or not isinstance(ts, int):
        problems.append("ts")
    if not isinstance(body, str):
        problems.append("body")
    if not isinstance(details, dict):
        problems.append("details")
    parsed_source = _source_from(source)
    if parsed_source is None:
        problems.append("source")
    if problems:
        shown = eid if isinstance(eid, str) else "?"
        return None, f"event {shown[:80]!r}: bad field(s) {', '.join(problems)}"
    assert parsed_source is not None and isinstance(eid, str) and isinstance(owner, str)
    assert isinstance(ts, int) and isinstance(body, str) and isinstance(details, dict)
    return (
        Event(eid, kind, owner, ts, parsed_source, body, details),  # type: ignore[arg-type]
        None,
    )


def _source_from(raw: object) -> EventSource | None:
    if not isinstance(raw, dict):
        return None
    tool, call_id, args = raw.get("tool"), raw.get("call_id", ""), raw.get("args", {})
    if not isinstance(tool, str) or not isinstance(call_id, str) or not isinstance(args, dict):
        return None
    return EventSource(tool, call_id, args)


def one_line_args(args: Mapping[str, Any]) -> str:
    """original_args for the model: one line of JSON, at most MAX_ARGS_CHARS."""
    text = json.dumps(dict(args), ensure_ascii=False, separators=(",", ":"), default=str)
    text = " ".join(text.split())
    return text if len(text) <= MAX_ARGS_CHARS else text[: MAX_ARGS_CHARS - 1] + "…"
