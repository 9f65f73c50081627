"""A job's news, told to its owners: the one teller of the one end fact (`JobEnd`).

Its supervisor's ending (ending.py `finish`), crash recovery (store/recovery.py, through the
store's news `teller`) and a keep-alive job's answer (`final` "waiting") all call `tell`,
which tells in this order around the writing of the job's status (`record`):

1. the end rendered for its owners (`HOOKS.ended`: a proc's `job_exit`, a thread parent's
   `child_closed`), then the generic end notice for every owner that is itself a job
   (`job-<id>`) and that no rendering addressed, so a parent job waiting for a child is
   woken by its end, and an owner that sees the job finished finds these events:

       [specialists event] notice from job (1a2b3c4d)
       original_args: {"specialist":"reviewer","prompt":"review the diff"}
       ---
       Job 1a2b3c4d (reviewer) done after 12.4 s. Its answer: ...

2. `record()`: the final event and status, `telling` (store/records.py);
3. the completion notice (events/notices.py `completion`) for every other key of its owner
   and its subscribers (outside sessions: claude-..., pi-...), after the status, so a woken
   session reads `result` at once; then the subscribers (`HOOKS.heard`: a goal mission's
   next step); then `record()` again: the status, no longer `telling`. A supervisor killed
   before that leaves it `telling`, and recovery (store/recovery.py) tells steps 3 again.

Every id is fixed per job (`job-<id>:notice:1` here and in the completion notice): a job
ends once, so a supervisor and crash recovery that both report the same end (it died between
telling and recording) wake each owner once (the inbox's seen-set); a goal mission counts
each idle turn once (missions/goal.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from specialists.base.errors import SpecialistsError
from specialists.base.lazy import logger
from specialists.events import notices
from specialists.events.model import EventSource
from specialists.events.owners import is_owner, job_owner, owner_job_id
from specialists.events.timers import TimerStore
from specialists.events.told import Told, post_all
from specialists.store.jobs import JobStore, now_ms
from specialists.store.news import NEWS
from specialists.store.records import JobRecord, JobStatus
from specialists.supervise.hooks import HOOKS, JobEnd

log = logger("specialists.supervisor")

ANSWER_HEAD_CHARS = 2000  # the answer inline; the rest through `specialists result <id>`
PROMPT_CHARS = 120


def tell(
    ending: JobEnd,
    record: Callable[[], object] | None = None,
    *,
    close_timers: bool = True,
    told: bool = False,
) -> list[str]:
    """Tell the job's news to whoever must hear of it, writing its status (`record`: its
    final event too, the first time) at its turn and once more when all is told; problems
    as lines (never raised, but what `record` raises). `told`: its end was told and its end
    event written (its supervisor died before its status, or before it told its sessions):
    the rest only.

    At an end, first fire what is due for every owner: a front that sees an owner fires its
    timers, even when the owner's own process is gone (a Claude Code session that ended: its
    next hook, or this, delivers them). `close_timers`: the job's own pending timers are
    cancelled (a crashed job's stay, to fire late for the next front that looks:
    docs/timers.md).
    """
    NEWS.check()  # unbooted, no feature would render it: every owner's word lost silently
    root, job = ending.store.root, ending.record
    problems: list[str] = []
    if ending.final != "waiting" and not told:
        problems += fire_owners_due(root, job.owner, ending.now_ms)
        addressed: set[str] = set()
        for render in HOOKS.ended:
            try:
                rendered = list(render(ending))
            except Exception as exc:  # one feature's fault never keeps the others' word (R-E5)
                if not isinstance(exc, OSError | SpecialistsError):
                    log.exception("rendering the end of job %s", job.id)
                problems.append(f"could not render the end of job {job.id}: {exc}")
                continue
            problems += post_all(root, rendered)
            addressed.update(t.owner for t in rendered)
        problems += post_all(root, end_notices(ending, addressed))
        if close_timers:
            problems += close_own_timers(root, job.id, now_ms=ending.now_ms)
    if record is not None:
        ending.status.telling = ending.final != "waiting"
        record()
    problems += post_all(root, notices.completion(root, job.id))
    for hear in HOOKS.heard:
        try:
            hear(ending)
        except Exception as exc:  # R-E5, as above
            if not isinstance(exc, OSError | SpecialistsError):
                log.exception("after the news of job %s", job.id)
            problems.append(f"after the news of job {job.id}: {exc}")
    if record is not None and ending.status.telling:
        ending.status.telling = False
        record()  # told: the status again, so that no recovery tells it twice
    return problems


def end_notices(ending: JobEnd, addressed: set[str]) -> list[Told]:
    """The generic end notice for each owner that is a job and heard nothing else of it."""
    record = ending.record
    source = EventSource(
        "job", record.id, {"specialist": record.specialist, "prompt": record.prompt[:PROMPT_CHARS]}
    )
    body = end_text(record, ending.final, ending.answer, ending.error)
    details = {"job_id": record.id, "status": ending.final, "error": ending.error}
    return [
        Told(owner, "notice", source, body, f"job-{record.id}", 1, details)
        for owner in dict.fromkeys(record.owner)
        if is_owner(owner) and owner_job_id(owner) is not None
        if owner not in addressed
    ]


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


def tell_recovered(
    store: JobStore,
    status: JobStatus,
    write: Callable[[], object] | None = None,
    *,
    close_timers: bool,
    told: bool = False,
) -> list[str]:
    """The same, for a job that ends without its supervisor, as `status` says (its record
    unreadable: the completion notice only, which reads what it can)."""
    job_id = status.id
    try:
        record = store.read_record(job_id)
    except (OSError, SpecialistsError, ValueError, TypeError) as exc:
        if write is not None:
            write()
        return [
            f"job {job_id}: {exc}",
            *post_all(store.root, notices.completion(store.root, job_id)),
        ]
    answer = store.read_result(job_id) if status.status == "done" else None
    ending = JobEnd(
        store=store,
        record=record,
        status=status,
        final=status.status,
        error=status.error,
        answer=answer,
        answers=0,
        now_ms=now_ms(),
        event=lambda *_, **__: None,  # its log is closed: recovery writes its last event
        report=lambda problem: log.warning("job %s: %s", job_id, problem),
        recovered=True,
    )
    return tell(ending, write, close_timers=close_timers, told=told)


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


def tell_owners_after_crash(
    state_root: Path, status: JobStatus, record: Callable[[], None], *, told: bool = False
) -> None:
    """A job ends without its supervisor (store.news `teller`; `record` writes the final
    `status`): its owners hear of the end as its supervisor would have told them; its timers
    stay, to fire late for the next front that looks at it. Problems are logged, never
    raised; recovery writes the end whatever happens here."""
    store = JobStore(state_root, news=None)
    try:
        problems = tell_recovered(store, status, record, close_timers=False, told=told)
    except Exception:  # a bug here must not keep recovery from writing the end (R-E5)
        log.exception("telling the end of job %s after its crash", status.id)
        return
    for problem in problems:
        log.warning("after the crash of job %s: %s", status.id, problem)
