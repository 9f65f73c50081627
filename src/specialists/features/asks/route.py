"""Who supervises a job, whether anyone of them is still there, and the event they get.

A job's supervisors are the keys of its owner (job.json `owner`): the parent job of a
thread, the Claude Code session and agent process that started it, a schedule, a pi
session. A key that names a job is gone once that job has ended or its supervisor died; a
key that names a process (`agent-`, `mcp-` `<pid>.<start>`) is gone when that process is.
Other sessions (claude-, pi-, codex-, cli-) cannot be proven gone: their inbox keeps the
ask until someone looks, so they count as reachable.
"""

from __future__ import annotations

import re
from pathlib import Path

from specialists.base.errors import SpecialistsError, StoreError
from specialists.events.inbox import Inbox
from specialists.events.model import EventSource
from specialists.events.owners import owner_job_id
from specialists.features.asks.model import Ask
from specialists.store.jobs import JobStore
from specialists.store.liveness import is_alive
from specialists.store.recovery import supervisor_alive

_PROCESS_KEY = re.compile(r"(?:agent|mcp)-([0-9]+)\.([0-9]+)")


def gone_reason(state_root: Path, keys: tuple[str, ...] | list[str]) -> str | None:
    """None while one of `keys` may still hear; else why none can (one line)."""
    if not keys:
        return "this job has no supervisor (no parent or owner started it)"
    reasons = []
    store = JobStore(state_root, news=None)  # reads only: a dead parent is not recorded here
    for key in keys:
        job_id = owner_job_id(key)
        if job_id is not None:
            try:
                st = store.read_status(job_id)
            except (OSError, ValueError, SpecialistsError) as exc:
                reasons.append(f"job {job_id} is unreadable ({exc})")
                continue
            if st is None or (st.active and supervisor_alive(st)):
                continue  # being created, or alive
            reasons.append(
                f"job {job_id} has ended ({st.status})" if not st.active else f"job {job_id} died"
            )
            continue
        m = _PROCESS_KEY.fullmatch(key)
        if m is not None:
            if is_alive(int(m.group(1)), int(m.group(2))):
                continue
            reasons.append(f"{key} has exited")
            continue
        return None  # a session that cannot be proven gone
    return "your supervisor is gone: " + "; ".join(reasons) if reasons else None


def event_body(ask: Ask, specialist: str) -> str:
    head = f"Job {ask.job_id} ({specialist}) "
    if ask.waits:
        head += (
            f"asks you ({ask.kind}, {ask.id}; it waits up to {ask.timeout_s:g} s for your reply):"
        )
        tail = (
            f'Reply with reply_to_ask(ask_id="{ask.id}", answer="...") or: '
            f"specialists reply {ask.id} <answer>"
        )
    else:
        head += f"reports progress ({ask.id}; no reply expected):"
        tail = ""
    return "\n".join(x for x in (head, ask.message, tail) if x)


def post(state_root: Path, ask: Ask, specialist: str) -> int:
    """One `ask` event (one id) in each supervisor's inbox; how many took it (StoreError
    when none did: the child must know that nobody heard it)."""
    source = EventSource("contact_supervisor", ask.call_id, {"kind": ask.kind, "job": ask.job_id})
    details: dict[str, object] = {"ask_id": ask.id, "job_id": ask.job_id, "ask_kind": ask.kind}
    if ask.waits:
        details["timeout_s"] = ask.timeout_s
    posted, last_error = 0, None
    for key in ask.to:
        try:
            Inbox(state_root, key).append(
                "ask",
                source,
                event_body(ask, specialist),
                source_id=ask.id,
                seq=1,
                details=details,
                ts_ms=ask.asked_at_ms,
            )
            posted += 1
        except (OSError, SpecialistsError) as exc:
            last_error = exc
    if posted == 0 and last_error is not None:
        raise StoreError(f"the ask reached no supervisor's inbox: {last_error}")
    return posted
