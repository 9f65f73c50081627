"""Completion notices: a job's news (an answer, or its end) as an event for its owner.

Each time a job has news its owner must hear of, one `notice` event goes to the inbox of
every key of the job's owner (job.json `owner`, owner.py; events/ for inboxes) and of its
subscribers (`specialists wait --subscribe`), told by the job's one teller
(supervise/news.py `tell`) once its status is written, so a woken session reads `result`
at once:

- the end of a job, from its supervisor and from crash recovery alike, for every key but the
  owners that are jobs: those heard of it from the teller, with its answer inline, before
  its final status;
- each answer of a keep-alive job that then waits for a follow-up.

The body names the job, its specialist, its outcome and the command that reads it:

    Specialist 'reviewer' completed (job a1b2c3d4, 1m47s). Run: specialists result a1b2c3d4
    (MCP tool: result)            <- on the same line, cut here to fit this page

Ids are fixed by the job, so the supervisor and recovery cannot both wake the model (the
inbox's seen-set drops a second copy, R-E1): `job-<job id>:notice:1` for the end (the id
supervise/news.py gives a job owner's end notice too) and `<job id>.answer:notice:<n>` for a
keep-alive job's n-th answer. A job without an owner (a person at a terminal) posts nothing.
Reading the answer (`clear`, from store/view.py: the CLI's `result`, a foreground run, the
MCP tools `result`, `use_specialist`, `run_parallel`) drops the job's notices that were not
delivered yet. `prune` keeps the bounds the notice files had:
a notice older than NOTICE_TTL_S, or whose job was collected, is never delivered, and an
owner keeps at most MAX_NOTICES undelivered ones (the oldest go).

Proc jobs (procs/) report their end as exactly one `job_exit` event with the exit code and
output tail (R-J4), a rendering of the same end: they get no end notice here
(OWN_END_EVENT_RUNNERS).

Until wave 1's `.specialists/ready/` markers are gone from every project, `prune` turns any
left there into the job's completion notice (`migrate_ready`, for one release).

Posting never raises into the supervisor (R-E5): a failed append is logged. Only the light
standard library at import time: the hooks import NOTICE_TTL_S; the events room (which uses
dataclasses) is imported when a notice is posted, cleared or pruned.
"""

from __future__ import annotations

import os
import stat
import time

from specialists.base.display import display_line, duration
from specialists.base.owner import is_key
from specialists.base.vocab import PROC_RUNNER
from specialists.events.owners import has_inbox
from specialists.store.files import object_or_none
from specialists.store.ids import is_job_id
from specialists.store.records import LIMIT_EVENT, PAUSED_EVENT

TYPE_CHECKING = False  # no `pathlib` at run time: the hooks import this module
if TYPE_CHECKING:
    from pathlib import Path

    from specialists.events.inbox import Inbox
    from specialists.events.told import Told


def _warn(message: str, *args: object) -> None:
    """Log a problem. `logging` costs ~14 ms to import, and the hooks import this module."""
    import logging

    logging.getLogger("specialists.events.notices").warning(message, *args)


NOTICE_TTL_S = 2 * 86400.0
MAX_NOTICES = 200  # undelivered notices kept per owner; the oldest go first
MAX_ERROR_CHARS = 160
MAX_JOB_FILE_BYTES = 4 * 1024 * 1024  # job.json holds the prompt: bounded like the store does
MAX_STATUS_BYTES = 1024 * 1024
MAX_ANSWER_IDS = 50  # answers whose notices reading the result drops (the newest)
# Runners whose jobs report their own end (procs: R-J4's one job_exit, procs/exit.py).
OWN_END_EVENT_RUNNERS = frozenset({PROC_RUNNER})
ACTIVE = frozenset({"starting", "running"})
READY_DIR = "ready"  # wave 1's marker directory, migrated by `prune`


def end_source(job_id: str) -> str:
    return f"job-{job_id}"


def end_event_id(job_id: str) -> str:
    return f"{end_source(job_id)}:notice:1"


def answer_event_id(job_id: str, n: int) -> str:
    return f"{job_id}.answer:notice:{n}"


# --- the text -------------------------------------------------------------------------------


def notice_body(job_id: str, status: dict | None) -> str:
    """What the owner reads: the job, its specialist, its outcome and the command to read it."""
    if status is None:
        return (
            f"Specialist job {job_id} has news, but its status is unreadable. "
            f"Run: specialists feed --job {job_id} (MCP tool: feed)"
        )
    state = status.get("status")
    name = display_line(status.get("specialist") or "?", 60)
    elapsed = status.get("elapsed_s")
    took = duration(elapsed if isinstance(elapsed, int | float) else 0)
    result = f"Run: specialists result {job_id} (MCP tool: result)"
    feed = f"Run: specialists feed --job {job_id} (MCP tool: feed)"
    if state == "done":
        return f"Specialist '{name}' completed (job {job_id}, {took}). {result}"
    if state == "waiting" and status.get("current_event") == LIMIT_EVENT:
        return (
            f"Specialist '{name}' met a usage limit (job {job_id}, {took}) and is paused until "
            f"it resets; it then continues by itself (earlier: `specialists resume {job_id}`; "
            f"to end it: `specialists stop {job_id}`). {feed}"
        )
    if state == "waiting" and status.get("current_event") == PAUSED_EVENT:
        return (
            f"Specialist '{name}' was interrupted (job {job_id}, {took}) and is paused: "
            f"continue it with a follow-up or `specialists resume {job_id}`. {feed}"
        )
    if state == "waiting":
        return (
            f"Specialist '{name}' answered (job {job_id}, {took}) and waits for a follow-up. "
            f"{result}"
        )
    if state == "cancelled":
        return f"Specialist '{name}' was cancelled (job {job_id}, {took}). {feed}"
    if state in ACTIVE:  # the final status could not be written (a full disk)
        return (
            f"Specialist '{name}' (job {job_id}) has news, but its status still reads {state}. "
            f"Run: specialists status {job_id} (MCP tool: status)"
        )
    error = display_line(status.get("error") or f"status {state!r}", MAX_ERROR_CHARS)
    return f"Specialist '{name}' failed (job {job_id}, {took}): {error}. {feed}"


# --- posting --------------------------------------------------------------------------------


def completion(state_dir: Path, job_id: str) -> list[Told]:
    """The job's completion notice (its end, or a keep-alive answer) for every key of its
    owner and its subscribers, as its status on disk says it: what an owner woken by it finds
    with `result`. Told by the one teller (supervise/news.py), after the status is written."""
    from specialists.events.model import EventSource
    from specialists.events.told import Told, told_by_child_closed

    if not is_job_id(job_id):
        return []
    job_dir = state_dir / "jobs" / job_id
    record = object_or_none(job_dir / "job.json", MAX_JOB_FILE_BYTES) or {}
    keys = _keys([*(record.get("owner") or []), *subscribers(job_dir)])
    if not keys:
        return []
    status = object_or_none(job_dir / "status.json", MAX_STATUS_BYTES)
    if status is not None and status.get("status") == "waiting":
        source_id, seq = f"{job_id}.answer", max(1, _answers(job_dir))
    elif record.get("runner") in OWN_END_EVENT_RUNNERS:
        return []
    else:  # its owners that are jobs heard of its end before its status (supervise/news.py)
        told = {k for k in _keys(record.get("owner") or []) if k.startswith("job-")}
        parent = told_by_child_closed(state_dir, record.get("thread"))  # its child_closed
        keys = [k for k in keys if k not in told and k != parent]
        source_id, seq = end_source(job_id), 1
    details = {"job_id": job_id}
    if status is not None:
        for name in ("specialist", "status", "elapsed_s", "exit_code"):
            if status.get(name) is not None:
                details[name] = status[name]
        if status.get("error"):
            details["error"] = display_line(status["error"], 500)
    source = EventSource("run", job_id, {"specialist": str(record.get("specialist") or "?")[:60]})
    body = notice_body(job_id, status)
    return [Told(k, "notice", source, body, source_id, seq, details) for k in keys]


def retell(state_dir: Path, job_id: str) -> bool:
    """Post the completion notice again, for an owner that subscribed after the job ended
    (its id is fixed: an inbox that has it drops the copy); True when any inbox took it."""
    from specialists.events.told import post_all

    told = completion(state_dir, job_id)
    problems = post_all(state_dir, told)
    for problem in problems:
        _warn("%s", problem)
    return len(told) > len(problems)


def post_to_owners(
    state_dir: Path,
    keys: list[str],
    *,
    kind: str,
    source_id: str,
    seq: int,
    body: str,
    details: dict,
    args: dict,
    call_id: str,
    tool: str = "run",
) -> int:
    """Append one event (the same id for every key) to each key's inbox; how many took it.
    A failed append is logged, never raised (R-E5): the other keys still get theirs."""
    from specialists.events.model import EventSource
    from specialists.events.told import Told, post_all

    source = EventSource(tool, call_id, args)
    told = [Told(k, kind, source, body, source_id, seq, details) for k in keys]  # type: ignore[arg-type]
    problems = post_all(state_dir, told)
    for problem in problems:
        _warn("%s", problem)
    return len(told) - len(problems)


# --- reading the answer -----------------------------------------------------------------------


def clear(state_dir: str | Path, job_id: str) -> None:
    """The job's answer was read: drop its notices that were not delivered yet. Text paths
    and a look for the owners' inboxes first: `result` pays for the inbox only when one is
    there."""
    if not is_job_id(job_id):
        return
    job_dir = os.path.join(state_dir, "jobs", job_id)
    keys = [k for k in job_owner(job_dir) if has_inbox(state_dir, k)]
    if not keys:
        return
    answers = _answers(job_dir)
    ids = [end_event_id(job_id)]
    ids += [
        answer_event_id(job_id, n) for n in range(max(1, answers - MAX_ANSWER_IDS + 1), answers + 1)
    ]
    from pathlib import Path

    from specialists.events.inbox import Inbox

    for inbox in (Inbox(Path(state_dir), k) for k in keys):
        try:
            inbox.drop(ids)
        except OSError as exc:
            _warn("notices of job %s for %s not dropped: %s", job_id, inbox.owner, exc)


# --- bounds ---------------------------------------------------------------------------------


def prune(state_dir: Path, now: float | None = None) -> list[str]:
    """Drop notices nobody will read (expired, job collected, past MAX_NOTICES per owner) and
    migrate wave 1's ready/ markers. Returns one warning per problem."""
    now = time.time() if now is None else now
    problems = migrate_ready(state_dir, now)
    owners = state_dir / "owners"
    try:
        names = [
            e.name for e in os.scandir(owners) if is_key(e.name) and e.is_dir(follow_symlinks=False)
        ]
    except (FileNotFoundError, NotADirectoryError):
        return problems
    from specialists.events.inbox import Inbox

    for name in names:
        inbox = Inbox(state_dir, name)
        try:
            if inbox.has_pending():
                _prune_inbox(inbox, state_dir, now)
        except OSError as exc:
            problems.append(f"notices of {name} not pruned: {exc.strerror or exc}")
    return problems


def _prune_inbox(inbox: Inbox, state_dir: Path, now: float) -> None:
    with inbox.locked():
        notices = [
            e for e in inbox.pending(max_events=10 * MAX_NOTICES).events if e.kind == "notice"
        ]
        stale = {e.id for e in notices if expired(e.ts_ms, now) or not _job_exists(state_dir, e)}
        fresh = [e.id for e in notices if e.id not in stale]
        inbox.drop([*stale, *fresh[: max(0, len(fresh) - MAX_NOTICES)]])


def expired(ts_ms: int, now: float | None = None) -> bool:
    now = time.time() if now is None else now
    return now - ts_ms / 1000 > NOTICE_TTL_S


def _job_exists(state_dir: Path, event: object) -> bool:
    job_id = getattr(event, "details", {}).get("job_id")
    return (
        not isinstance(job_id, str)
        or not is_job_id(job_id)
        or (state_dir / "jobs" / job_id).is_dir()
    )


def migrate_ready(state_dir: Path, now: float | None = None) -> list[str]:
    """Wave 1 kept notices as `.specialists/ready/<id>` files: post each one still worth
    telling as an event, then remove the directory. For one release; one lstat when absent."""
    directory = state_dir / READY_DIR
    try:
        if not stat.S_ISDIR(os.lstat(directory).st_mode):
            return [f"{directory} is not a directory; remove it"]
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return []
    now = time.time() if now is None else now
    problems: list[str] = []
    for entry in entries:
        job_id = entry.name.lstrip(".").split(".", 1)[0]  # `<id>` or a claim `.<id>.<pid>.claim`
        try:
            info = entry.stat(follow_symlinks=False)
            fresh = stat.S_ISREG(info.st_mode) and now - info.st_mtime <= NOTICE_TTL_S
            if fresh and is_job_id(job_id) and (state_dir / "jobs" / job_id).is_dir():
                retell(state_dir, job_id)
            if stat.S_ISDIR(info.st_mode):
                problems.append(f"{entry.path} is a directory, not a notice; remove it")
            else:
                os.unlink(entry.path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            problems.append(f"cannot migrate {entry.path}: {exc.strerror or exc}")
    try:
        os.rmdir(directory)
    except OSError as exc:
        if not problems:
            problems.append(f"cannot remove {directory}: {exc.strerror or exc}")
    return problems


# --- files ----------------------------------------------------------------------------------


def job_owner(job_dir: str | Path) -> list[str]:
    """The `owner` keys of a job's job.json; [] when absent or unreadable (then no one is
    told, which is what a job without an owner gets anyway)."""
    job_file = os.path.join(job_dir, "job.json")
    return _keys((object_or_none(job_file, MAX_JOB_FILE_BYTES) or {}).get("owner"))


SUBSCRIBERS_DIR = "subscribers"  # jobs/<id>/subscribers/<owner key>: `specialists wait --subscribe`


def subscribers(job_dir: Path) -> list[str]:
    """Owner keys that subscribed to the job's end after it was launched (empty files named
    by the key, supervise/waiting.py); a symlinked directory is not followed."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(job_dir / SUBSCRIBERS_DIR, flags)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:  # ELOOP: a planted symlink
        _warn("subscribers of %s not read: %s", job_dir.name, exc)
        return []
    try:
        return sorted(name for name in os.listdir(fd) if is_key(name))
    finally:
        os.close(fd)


def _keys(raw: object) -> list[str]:
    return list(dict.fromkeys(k for k in raw if is_key(k))) if isinstance(raw, list) else []


def _answers(job_dir: str | Path) -> int:
    try:
        return sum(
            1 for e in os.scandir(os.path.join(job_dir, "answers")) if e.name.endswith(".txt")
        )
    except (FileNotFoundError, NotADirectoryError):
        return 0


def prune_stale(store: object, crashed: list[str]) -> list[str]:
    """`prune` as run-start housekeeping (supervise.hooks.HOOKS.housekeeping)."""
    from pathlib import Path

    del crashed
    root = getattr(store, "root", None)
    return prune(root) if isinstance(root, Path) else []
