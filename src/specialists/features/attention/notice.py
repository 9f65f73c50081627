"""The needs-attention notice: its words, its details, and its way to the owner's inbox.

A `notice` event (events/model.py) with `details.attention` naming the trigger (`quiet`,
`tool_open`, `failures`, or `watchdog` for a review the watchdog started), addressed to
every key of the job's owner (job.json `owner`) under the id
`<job id>.attention:notice:<n>`, n counting the job's notices from 1. A job without an owner
(a person at a terminal) posts nothing; its status and events.jsonl still say it.

The body states what was observed and the concrete next actions; it never claims the agent
is stuck (it may be thinking, or running a long command on purpose).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, assert_never

from specialists.base.display import display_line, duration
from specialists.events.notices import post_to_owners
from specialists.features.attention.watch import Attention, Failures, Quiet, ToolOpen
from specialists.store.records import JobRecord


def summary(item: Attention) -> str:
    """One line for status.json's needs_attention and the job's event."""
    if isinstance(item, Quiet):
        return f"no activity for {_dur(item.quiet_ms)} (threshold {_dur(item.threshold_ms)})"
    if isinstance(item, ToolOpen):
        tool = display_line(item.tool, 120)
        return (
            f"tool call {tool} open for {_dur(item.open_ms)} (threshold {_dur(item.threshold_ms)})"
        )
    if isinstance(item, Failures):
        return f"{item.count} failed mutating tool calls in a row ({', '.join(item.tools)})"
    assert_never(item)


def details(item: Attention) -> dict[str, Any]:
    if isinstance(item, Quiet):
        return {"quiet_ms": item.quiet_ms, "threshold_ms": item.threshold_ms}
    if isinstance(item, ToolOpen):
        return {"tool": item.tool, "open_ms": item.open_ms, "threshold_ms": item.threshold_ms}
    if isinstance(item, Failures):
        return {"count": item.count, "tools": list(item.tools)}
    assert_never(item)


def next_actions(job_id: str) -> str:
    return (
        "Next steps (MCP tools of the same names):\n"
        f"  specialists status --job {job_id}         last activity and current tool\n"
        f"  specialists feed --job {job_id}           its recent events\n"
        f'  specialists steer {job_id} "<guidance>"   redirect the run in progress\n'
        f"  specialists interrupt {job_id}            pause it (resumable: specialists resume)\n"
        f"  specialists stop {job_id}                 end it (abort, then terminate)"
    )


def body(record: JobRecord, item: Attention, last_event_at_ms: int | None) -> str:
    head = f"Job {record.id} ({display_line(record.specialist, 60)}) needs attention: "
    lines = [head + summary(item) + "."]
    if isinstance(item, Quiet):
        when = _clock_time(last_event_at_ms)
        last = f"last event: {item.last_event} at {when}" if item.last_event else "no event yet"
        lines.append(f"Observed, not diagnosed ({last}): it may still be working.")
    elif isinstance(item, ToolOpen):
        lines.append("Observed, not diagnosed: the command may legitimately take this long.")
    lines.append(next_actions(record.id))
    return "\n".join(lines)


def post(
    state_dir: Path, record: JobRecord, seq: int, kind: str, text: str, facts: dict[str, Any]
) -> int:
    """Append the notice to every owner key's inbox; how many took it (never raises)."""
    if not record.owner:
        return 0
    return post_to_owners(
        state_dir,
        list(record.owner),
        kind="notice",
        source_id=f"{record.id}.attention",
        seq=seq,
        body=text,
        details={"attention": kind, "job_id": record.id, "specialist": record.specialist, **facts},
        args={"specialist": record.specialist[:60]},
        call_id=record.id,
        tool="attention",
    )


def _dur(ms: int) -> str:
    return duration(ms / 1000)


def _clock_time(ms: int | None) -> str:
    if ms is None:
        return "an unknown time"
    return time.strftime("%H:%M:%S UTC", time.gmtime(ms / 1000))
