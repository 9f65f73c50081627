"""A job's end, told to its owners as an inbox event (the generic "a job ended" event).

Every owner of a job (`JobRecord.owner`) that is itself a job (`job-<id>`) gets one `notice`
event when the job ends, so a parent job waiting for a child is woken by its end:

    [specialists event] notice from job (1a2b3c4d)
    original_args: {"specialist":"reviewer","prompt":"review the diff"}
    ---
    Job 1a2b3c4d (reviewer) done after 12.4 s. Its answer: ...

The event id is fixed per job (`job-<id>:notice:1`): a job ends once, so a supervisor and
crash recovery that both report the same end wake the owner once (the inbox's seen-set).
It is appended before the job's final status is written, so an owner that sees the job
finished also finds the event. Proc jobs (bg_run) report their own `job_exit` instead.
A thread's parent whose inbox has the child's `child_closed` for this end already
(threads/closing.py; threads/told.py) gets no second word of it. Outside
sessions (claude-..., pi-...) hear of a job's end through its completion notice (notices.py),
which their own front turns into an event: telling them here too would wake them twice.
"""

from __future__ import annotations

import logging
from pathlib import Path

from specialists.base.errors import SpecialistsError
from specialists.base.vocab import PROC_RUNNER
from specialists.events.inbox import Inbox
from specialists.events.model import EventSource
from specialists.events.owners import is_owner, job_owner, owner_job_id
from specialists.events.timers import TimerStore
from specialists.events.told import told_by_child_closed
from specialists.store.jobs import JobStore, now_ms
from specialists.store.records import JobRecord, JobStatus

log = logging.getLogger("specialists.supervisor")

OWN_END_EVENT_RUNNERS = frozenset({PROC_RUNNER})  # jobs that send their own job_exit
ANSWER_HEAD_CHARS = 2000  # the answer inline; the rest through `specialists result <id>`
PROMPT_CHARS = 120


def tell_owners(
    state_root: Path,
    record: JobRecord,
    final: str,
    answer: str | None,
    error: str | None,
    *,
    now_ms: int | None = None,
) -> list[str]:
    """Append the job's end to each owner's inbox; problems as lines (never raised).

    With `now_ms`, first fire what is due for every owner: a front that sees an owner fires
    its timers, even when the owner's own process is gone (a Claude Code session that
    ended: its next hook, or this, delivers them).
    """
    problems = [] if now_ms is None else fire_owners_due(state_root, record.owner, now_ms)
    if record.runner in OWN_END_EVENT_RUNNERS:
        return problems
    body = end_text(record, final, answer, error)
    source = EventSource(
        "job", record.id, {"specialist": record.specialist, "prompt": record.prompt[:PROMPT_CHARS]}
    )
    details = {"job_id": record.id, "status": final, "error": error}
    closed_to = told_by_child_closed(state_root, record.thread)
    for owner in record.owner:
        if not is_owner(owner) or owner_job_id(owner) is None or owner == closed_to:
            continue
        try:
            Inbox(state_root, owner).append(
                "notice", source, body, source_id=f"job-{record.id}", seq=1, details=details
            )
        except (OSError, SpecialistsError) as exc:
            problems.append(f"could not tell {owner} that the job ended: {exc}")
    return problems


def fire_owners_due(state_root: Path, owners: list[str], now_ms: int) -> list[str]:
    """Fire the due timers of each owner key; problems as lines (never raised)."""
    problems: list[str] = []
    for owner in owners:
        if not is_owner(owner):
            continue
        try:
            TimerStore(state_root, owner).fire_due(now_ms)
        except (OSError, SpecialistsError) as exc:
            problems.append(f"could not fire the due timers of {owner}: {exc}")
    return problems


def close_own_timers(state_root: Path, job_id: str, *, now_ms: int) -> list[str]:
    """A job that ended cannot be woken: its pending timers are cancelled (recorded), so
    `timer list` and the fleet views never show a timer that will not fire."""
    try:
        store = TimerStore(state_root, job_owner(job_id))
        if store.path.exists():
            store.cancel_all(now_ms=now_ms)
    except (OSError, SpecialistsError) as exc:
        return [f"could not cancel the pending timers of job {job_id}: {exc}"]
    return []


def tell_owners_of(store: JobStore, job_id: str, *, close_timers: bool = True) -> list[str]:
    """The same, for a job that ended without its supervisor (recovered after a crash).
    `close_timers=False`: its pending timers stay, to fire late for the next front that looks
    at its owner (docs/timers.md)."""
    try:
        record = store.read_record(job_id)
        status: JobStatus | None = store.read_status(job_id)
    except (OSError, SpecialistsError, ValueError, TypeError) as exc:
        return [f"job {job_id}: {exc}"]
    if status is None or status.active:
        return []
    answer = store.read_result(job_id) if status.status == "done" else None
    now = now_ms()
    problems = tell_owners(store.root, record, status.status, answer, status.error, now_ms=now)
    if not close_timers:
        return problems
    return problems + close_own_timers(store.root, job_id, now_ms=now)


def end_text(record: JobRecord, final: str, answer: str | None, error: str | None) -> str:
    head = f"Job {record.id} ({record.specialist}) {final}"
    if final == "error":
        return f"{head}: {error or 'unknown error'}"
    if final == "cancelled":
        return f"{head}."
    text = (answer or "").strip()
    if not text:
        return f"{head} with an empty answer."
    if len(text) > ANSWER_HEAD_CHARS:
        text = text[:ANSWER_HEAD_CHARS] + f"\n[... see `specialists result {record.id}` ...]"
    return f"{head}. Its answer:\n{text}"


def tell_owners_after_crash(state_root: Path, job_id: str) -> None:
    """A job recovered after its supervisor died: its job owners hear of the end (store.news,
    `recovered`); its timers stay, to fire late for the next front that looks at it. Problems
    are logged, never raised."""
    for problem in tell_owners_of(JobStore(state_root, news=None), job_id, close_timers=False):
        log.warning("after the crash of job %s: %s", job_id, problem)
