"""The read side every interface shares (CLI status/result/feed, the MCP tools): statuses
with dead supervisors recorded on the way (recovery is applied only to active jobs), and
the few facts each interface shows about a job: which answer, how long, doing what, how
many of each outcome. The interfaces only render these; none computes them on its own.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from operator import attrgetter

from specialists.base.display import clock_time
from specialists.base.errors import StoreError
from specialists.store import index
from specialists.store.jobs import ANSWERS_DIR, RESULT_FILE, JobStore, iter_statuses
from specialists.store.records import ACTIVE_STATES, HELD_EVENT, PAUSED_EVENT, JobStatus
from specialists.store.recovery import recover_if_dead, settle_unstarted

WAITING_DOING = "waiting for a follow-up"
PAUSED_DOING = "paused by an interrupt: a follow-up or `resume` continues it"


def elapsed_s(st: JobStatus | index.Finished, now: float | None = None) -> float:
    """Seconds the job has run: live while it is active, as recorded once it ended."""
    if isinstance(st, JobStatus) and st.active and st.started_at_ms:
        now = time.time() if now is None else now
        return round(max(0.0, now - st.started_at_ms / 1000), 1)
    return st.elapsed_s


WAITING_MODEL = "waiting for the model"
# What a job's latest event means for a person watching (status.json's current_event).
ACTIVITY_WORDS = {
    "starting": "starting",
    "running": WAITING_MODEL,
    "run_start": WAITING_MODEL,
    "thinking": "thinking",
    "text": "writing",
    "toolcall": "calling a tool",
    "tool_execution": "running a tool",
    "tool_execution_end": WAITING_MODEL,  # it reads the tool's result
    "turn_end": WAITING_MODEL,
    "retry": "retrying the model",
    "compaction": "compacting its context",
    "waiting_for_events": "waiting for events",
    "closing": "closing",
    "stopping": "stopping",
    "steer_ack": "took a steer",
    "stalled": "silent (stalled)",
}


def name_of(st: JobStatus) -> str:
    """What a row is called: a workflow child's key, else its specialist."""
    return st.workflow_key or st.specialist


def doing(st: JobStatus) -> str:
    """What an active job is doing now, in words ('' when nothing is known): a workflow's
    progress, the tool it runs (`bash(ls -la)`), its latest words, else what its latest
    event means (`thinking`, `waiting for the model`)."""
    if st.paused_until_ms is not None and st.active:
        word = "held" if st.current_event == HELD_EVENT else "paused"
        at = clock_time(st.paused_until_ms, int(time.time() * 1000))
        return f"{word} until {at} (usage limit)"
    if st.status == "waiting":
        return PAUSED_DOING if is_paused(st) else WAITING_DOING
    if not st.active:
        return ""
    if st.progress:
        return progress_words(st.progress)
    event = st.current_event or ""
    if event == "waiting_for_events" and st.current_tool:
        return f"waiting for events: {st.current_tool}"
    if st.current_tool:
        return st.current_tool
    if event == "text" and st.last_text:
        return f"says: {st.last_text}"
    words = ACTIVITY_WORDS.get(event, event.replace("_", " "))
    if words == WAITING_MODEL and st.last_text:  # what it said last says most about it
        return f"{words} · said: {st.last_text}"
    return words


def progress_words(progress: dict[str, object]) -> str:
    """A workflow's progress in one line: `3/8 done · 2 running · 3 queued · phase review ·
    up to 4 at once` (fields of the wrong type are left out: status.json is untrusted)."""

    def count(name: str) -> int:
        value = progress.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    total = max(count("total"), count("done") + count("failed") + count("running"))
    parts = [f"{count('done')}/{total} done"]
    parts += [f"{count(k)} {k}" for k in ("failed", "running", "queued") if count(k)]
    phase = progress.get("phase")
    if isinstance(phase, str) and phase:
        parts.append(f"phase {phase}")
    if count("concurrency"):
        parts.append(f"up to {count('concurrency')} at once")
    return " · ".join(parts)


def is_paused(st: JobStatus) -> bool:
    """Waiting because an interrupt cut its run, not because it answered."""
    return st.status == "waiting" and st.current_event == PAUSED_EVENT


def outcome_counts(statuses: Iterable[JobStatus | index.Finished]) -> dict[str, int]:
    """Finished jobs per final status (done, error, cancelled), in first-seen order."""
    counts = Counter(map(attrgetter("status"), statuses))  # one pass in C over 1,000 rows
    return {status: n for status, n in counts.items() if status not in ACTIVE_STATES}


def read_answer(store: JobStore, st: JobStatus) -> str | None:
    """The answer to show for a job: result.txt once done, the latest answer of a job waiting
    for a follow-up, else None. Reading it clears the job's completion notice: its owner has
    the answer and needs no banner for it. Raises StoreError when the file is unreadable."""
    if st.status == "done":
        text = store.read_result(st.id)
    elif st.status == "waiting":
        text = store.latest_answer(st.id)
    else:
        return None
    if text is not None and store.news is not None:
        store.news.clear(store.root_str, st.id)
    return text


def answer_path(store: JobStore, st: JobStatus) -> str:
    """Where the full answer lives (named when an answer is shown clipped)."""
    if st.status == "waiting":
        return str(store.job_dir(st.id) / ANSWERS_DIR)
    return str(store.job_dir(st.id) / RESULT_FILE)


def current_status(store: JobStore, job_id: str) -> JobStatus:
    """The job's status, after recording a dead supervisor. Raises StoreError if unreadable."""
    status = store.read_status(job_id)
    if status is None:
        return settle_unstarted(store, job_id)
    return recover_if_dead(store, job_id, status)


def still_active(store: JobStore, job_id: str) -> bool:
    """Whether the job still starts or runs; one collected by gc has long ended. Raises
    StoreError if its status is unreadable."""
    if not store.job_dir(job_id).is_dir():
        return False
    return current_status(store, job_id).active


def all_statuses(store: JobStore) -> tuple[list[JobStatus], list[str]]:
    """Every job's status (recovered where dead), plus one line per unreadable job."""
    out: list[JobStatus] = []
    problems: list[str] = []
    for job_id, status, problem in iter_statuses(store):
        if problem is not None:
            problems.append(f"job {job_id}: {problem}")
            continue
        try:
            if status is None:
                status = settle_unstarted(store, job_id)
            out.append(recover_if_dead(store, job_id, status) if status.active else status)
        except (StoreError, OSError) as exc:
            problems.append(f"job {job_id}: {exc}")
            if status is not None:
                out.append(status)
    return out, problems


def overview(store: JobStore) -> tuple[list[JobStatus], list[index.Finished], list[str]]:
    """(active statuses, finished summaries, problems), reading only unfinished jobs' files."""
    problems: list[str] = []
    finished = index.load(store, problems)
    ids = store.list_ids()
    gone = finished.keys() - ids  # gc removed them
    for job_id in gone:
        del finished[job_id]
    changed = bool(gone)
    active: list[JobStatus] = []
    for job_id in ids:
        if job_id in finished:
            continue
        try:
            status = store.read_status(job_id) or settle_unstarted(store, job_id)
            if status.active:
                status = recover_if_dead(store, job_id, status)
        except (StoreError, OSError) as exc:
            problems.append(f"job {job_id}: {exc}")
            continue
        if status.active:
            active.append(status)
        else:
            finished[job_id] = index.Finished.of(status)
            changed = True
    if changed:
        index.save(store, finished)
    return active, list(finished.values()), problems
