"""Background commands as proc jobs: start, find, read, cancel and list them (the bg_* core).

Every function takes the project's state root and an owner key and returns a plain outcome;
the agent tools (procs/verbs.py) and `specialists bg` (cli/cmd_bg.py) only render them.
Bad input raises `UserError` before anything is created or signalled.

- `start_proc` checks everything first (command, cwd, watch patterns, timeout, isolation),
  then, under the owner's lock, counts the owner's running proc jobs against `jobs.max` and
  creates the job and its detached supervisor, so two concurrent calls cannot both take the
  last slot (R-J10). It returns at once: nothing waits for the command (R-J1).
- `cancel_proc` asks the job's supervisor to stop (SIGTERM to the group, 3 s, SIGKILL: the
  proc runner) and returns without waiting; a second cancel reports the state and asks
  nothing (R-J8).
- `read_output` reads the job's log by byte offset or its last lines, bounded, UTF-8 safe.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from specialists.base.errors import SpecialistsError, UserError
from specialists.base.reader import Invalid, check_text
from specialists.base.vocab import PROC_RUNNER
from specialists.events.emitter import new_nonce
from specialists.events.inbox import Inbox
from specialists.events.model import EventSource
from specialists.events.owners import check_owner
from specialists.features.procs.exit import ExitSummary, read_summary, seconds_text
from specialists.features.procs.isolate import check_isolation, find_bwrap
from specialists.features.procs.output import read_since, read_tail
from specialists.features.procs.spec import (
    MAX_COMMAND_CHARS,
    MAX_NAME_CHARS,
    MAX_SINCE,
    MAX_TAIL_LINES,
    MAX_TIMEOUT_S,
    OUTPUT_BYTES,
    OUTPUT_LOG,
    ProcOptions,
    Tether,
    WatchSettings,
)
from specialists.features.procs.watch import compile_watch
from specialists.store import index
from specialists.store.control import post_request, stop_pending
from specialists.store.jobs import JobStore, now_ms
from specialists.store.news import NEWS
from specialists.store.records import JobRecord, JobStatus
from specialists.store.recovery import recover_if_dead

BG_SPECIALIST = "bg"  # a proc job's `specialist` in job.json and status (it has none)
LIST_FINISHED = 20  # bg_list shows this many finished jobs after the running ones


@dataclass(frozen=True)
class ProcRequest:
    """What the caller asked for (tool arguments or command-line options, unchecked)."""

    command: str
    cwd: str | None = None  # relative to the caller's directory; None: the caller's own
    name: str = ""
    watch: tuple[str, ...] = ()
    associative: bool = False
    timeout_s: float | None = None
    isolate: bool = False


@dataclass(frozen=True)
class ProcJob:
    """One proc job as the bg tools show it."""

    id: str
    status: JobStatus
    options: ProcOptions
    summary: ExitSummary | None = None
    log_path: Path = field(default_factory=Path)

    @property
    def active(self) -> bool:
        """The command runs. Its account of the end (proc.json) is written before the job_exit
        and the supervisor's final status, so an owner woken by the job_exit never finds the
        job still counted against jobs.max or cancellable."""
        return self.status.active and (self.summary is None or self.summary.kind is None)

    @property
    def state(self) -> str:
        """running, cancelling, exited 0, exited 2, killed (SIGSEGV), cancelled, timeout, error."""
        st = self.status
        if self.active:
            return "cancelling" if st.current_event == "stopping" else st.status
        s = self.summary
        kind = s.kind if s is not None and s.kind else None
        if kind == "exited":
            return f"exited {s.exit_code}" if s is not None else "exited"
        if kind == "signaled":
            return f"killed ({s.signal})" if s is not None else "killed"
        if kind in ("cancelled", "timeout"):
            return "error" if st.status == "error" and kind == "cancelled" else kind
        return "cancelled" if st.status == "cancelled" else "error"

    def took(self) -> str:
        end = self.status.finished_at_ms if not self.active else now_ms()
        start = self.status.started_at_ms
        return seconds_text(max(0, (end or now_ms()) - start)) if start else "-"


def start_proc(
    state_root: Path,
    owner: str,
    request: ProcRequest,
    *,
    base_cwd: Path,
    max_jobs: int,
    settings: WatchSettings,
    source: EventSource,
    tether: Tether | None = None,
) -> tuple[ProcJob, int]:
    """Check `request`, then create the proc job and its supervisor (see the module doc); the
    job and its supervisor's pid.
    `max_jobs` is jobs.max; `settings` the jobs.* and events.maxChars values in force."""
    check_owner(owner)
    options = _checked_options(request, owner, base_cwd, settings, source, tether)
    store = proc_store(state_root)
    from specialists.store.gc import collect  # old jobs go first, as at every run start

    collect(store)
    from specialists.supervise.start import start

    with Inbox(state_root, owner).locked():  # R-J10: the count and the creation are one step
        running = [j for j in owned_jobs(store, owner) if j.active]
        limit = max_jobs
        if len(running) >= limit:
            shown = "; ".join(f"{j.id} ({j.options.label}, {j.took()})" for j in running[:10])
            raise UserError(
                f"too many background jobs: {len(running)} of jobs.max {limit} are running"
                + (f": {shown}" if shown else ""),
                hint="cancel one with bg_cancel, wait for a job_exit, or raise jobs.max in "
                ".specialists/config.toml",
            )
        begun = start(store, proc_record(options))
    status = store.read_status(begun.id) or JobStatus(id=begun.id, specialist=BG_SPECIALIST)
    job = ProcJob(begun.id, status, options, None, store.job_dir(begun.id) / OUTPUT_LOG)
    return job, begun.pid or 0


def proc_store(state_root: Path) -> JobStore:
    """The store as the bg tools open it: a proc job recovered on the way gets its job_exit
    (procs/exit.py); proc jobs have no completion notices."""
    return JobStore(state_root, news=NEWS)


def proc_record(options: ProcOptions) -> JobRecord:
    return JobRecord(
        id="",
        specialist=BG_SPECIALIST,
        prompt=options.command,
        task=options.command,
        runner=PROC_RUNNER,
        model=None,
        cwd=options.cwd,
        created_at_ms=now_ms(),
        permission="HIGH",  # it is the caller's own shell command
        runner_options=options.to_dict(),
        # Its owner waits for it (pending work: supervise/pending.py, the Stop hook) and hears
        # of its end through the one job_exit (R-J4): the generic end notice skips proc jobs
        # (notices.OWN_END_EVENT_RUNNERS, supervise/news.py).
        owner=[options.owner],
    )


def _checked_options(
    request: ProcRequest,
    owner: str,
    base_cwd: Path,
    settings: WatchSettings,
    source: EventSource,
    tether: Tether | None,
) -> ProcOptions:
    command = request.command
    if not isinstance(command, str) or not command.strip():
        raise UserError("the command is empty")
    _text(command, "the command", form="arg", max_chars=MAX_COMMAND_CHARS)
    _text(request.name, "the name", form="line", max_chars=MAX_NAME_CHARS)
    cwd = _directory(request.cwd, base_cwd)
    watch = list(request.watch)
    compile_watch(watch)  # an invalid or over-long pattern: error, nothing started (R-J5)
    timeout_ms = None
    if request.timeout_s is not None:
        t = request.timeout_s
        if isinstance(t, bool) or not isinstance(t, int | float) or not 1 <= t <= MAX_TIMEOUT_S:
            raise UserError(f"timeout_seconds must be from 1 to {MAX_TIMEOUT_S}; got {t!r}")
        timeout_ms = int(t * 1000)
    if request.isolate:
        if request.cwd is None:
            raise UserError(
                "isolate needs cwd: the one directory the command may write in",
                hint="give cwd explicitly",
            )
        check_isolation(find_bwrap(), cwd)  # fails closed: no sandbox, no command
    return ProcOptions(
        command=command,
        cwd=str(cwd),
        owner=owner,
        nonce=new_nonce(),
        name=request.name.strip(),
        watch=tuple(watch),
        associative=bool(request.associative),
        timeout_ms=timeout_ms,
        isolate=bool(request.isolate),
        tether=tether,
        source=source,
        settings=settings,
    )


def _text(value: str, what: str, *, form: str, max_chars: int) -> None:
    try:
        check_text(value, None, form=form, max_chars=max_chars)  # type: ignore[arg-type]
    except Invalid as exc:
        raise UserError(f"{what} {exc.problem}") from None


def _directory(raw: str | None, base: Path) -> Path:
    if raw is not None:
        _text(raw, "cwd", form="line", max_chars=4096)
    try:
        path = (base / raw).resolve() if raw else base.resolve()
        ok = path.is_dir()
    except (OSError, ValueError) as exc:
        raise UserError(f"cwd {str(raw)[:200]!r} cannot be used: {exc}") from None
    if not ok:
        what = "is not a directory" if path.exists() else "does not exist"
        raise UserError(f"cwd {path} {what}")
    return path


# --- finding ------------------------------------------------------------------------------


def owned_jobs(store: JobStore, owner: str | None, *, finished: bool = False) -> Iterator[ProcJob]:
    """The owner's proc jobs (every owner's for None): active ones, and finished ones too
    when asked. A dead supervisor is recorded on the way (its job_exit goes out then)."""
    done = {} if finished else index.load(store)
    for job_id in store.list_ids():
        if job_id in done:
            continue  # finished and indexed: not a running job of anyone
        job = _job(store, job_id, owner)
        if job is not None and (finished or job.active):
            yield job


def find_job(store: JobStore, owner: str | None, ref: str) -> ProcJob:
    """The proc job `ref` (an id or unique prefix) of `owner`; one clear error otherwise."""
    if not isinstance(ref, str) or not ref.strip():
        raise UserError("argument 'id' must be a job id")
    try:
        job_id = store.resolve(ref.strip())
    except SpecialistsError:
        job_id = ""
    job = _job(store, job_id, owner) if job_id else None
    if job is None:
        whose = "of yours " if owner else ""
        raise UserError(
            f"no background job {ref.strip()[:40]!r} {whose}".rstrip(),
            hint="bg_list shows them" if owner else "specialists bg list --all shows them",
        )
    return job


def _job(store: JobStore, job_id: str, owner: str | None) -> ProcJob | None:
    try:
        status = store.read_status(job_id)
        if status is None or status.runner != PROC_RUNNER:
            return None
        options = ProcOptions.from_dict(store.read_record(job_id).runner_options)
    except (SpecialistsError, OSError, ValueError, TypeError):
        return None  # damaged: `specialists status` reports it; the bg tools skip it
    if owner is not None and options.owner != owner:
        return None
    if status.active:
        status = recover_if_dead(store, job_id, status)
    job_dir = store.job_dir(job_id)
    return ProcJob(job_id, status, options, read_summary(job_dir), job_dir / OUTPUT_LOG)


def list_jobs(store: JobStore, owner: str | None) -> list[ProcJob]:
    """Running ones first (oldest first), then the latest LIST_FINISHED finished ones."""
    jobs = list(owned_jobs(store, owner, finished=True))
    active = sorted((j for j in jobs if j.active), key=lambda j: j.status.started_at_ms)
    ended = sorted((j for j in jobs if not j.active), key=lambda j: -(j.status.finished_at_ms or 0))
    return active + ended[:LIST_FINISHED]


def running_count(state_root: Path, owner: str) -> int:
    """How many of the owner's proc jobs run (the pi status line's `jobs N`)."""
    return sum(1 for _ in owned_jobs(proc_store(state_root), owner))


# --- cancelling ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ProcCancel:
    job: ProcJob
    asked: bool  # True: this call asked the supervisor to stop; False: nothing was sent

    def describe(self) -> str:
        j = self.job
        if self.asked:
            return (
                f"job {j.id} ({j.options.label}): cancelling (SIGTERM to its process group now, "
                "SIGKILL in 3 s if anything lingers); its job_exit event follows"
            )
        if j.active:
            return f"job {j.id} ({j.options.label}) is already being cancelled; nothing was sent"
        return f"job {j.id} ({j.options.label}) already ended ({j.state}); nothing to cancel"


def cancel_proc(store: JobStore, owner: str | None, ref: str) -> ProcCancel:
    job = find_job(store, owner, ref)
    return _cancel(store, job)


def cancel_all(store: JobStore, owner: str | None) -> list[ProcCancel]:
    return [_cancel(store, job) for job in owned_jobs(store, owner)]


def _cancel(store: JobStore, job: ProcJob) -> ProcCancel:
    if not job.active or job.status.current_event == "stopping":
        return ProcCancel(job, asked=False)
    job_dir = store.job_dir(job.id)
    if stop_pending(job_dir):
        return ProcCancel(job, asked=False)
    post_request(job_dir, "stop", "bg_cancel")
    return ProcCancel(job, asked=True)


# --- reading ------------------------------------------------------------------------------


@dataclass(frozen=True)
class OutputRead:
    job: ProcJob
    text: str
    next_offset: int  # give as `since` to read on
    size: int  # the log's size when read
    since: int | None  # None: the last `tail` lines were read


def read_output(
    store: JobStore, owner: str | None, ref: str, *, tail: object = 40, since: object = None
) -> OutputRead:
    if since is not None and (
        isinstance(since, bool) or not isinstance(since, int) or not 0 <= since <= MAX_SINCE
    ):
        raise UserError(f"since must be a byte offset from 0 to {MAX_SINCE}; got {since!r}")
    if isinstance(tail, bool) or not isinstance(tail, int) or not 1 <= tail <= MAX_TAIL_LINES:
        raise UserError(f"tail must be a number of lines from 1 to {MAX_TAIL_LINES}; got {tail!r}")
    job = find_job(store, owner, ref)
    if since is None:
        got = read_tail(job.log_path, tail, max_bytes=OUTPUT_BYTES)
    else:
        got = read_since(job.log_path, since, max_bytes=OUTPUT_BYTES)
        if since > got.size:
            raise UserError(
                f"since {since} is past the end of the output ({got.size} bytes so far)",
                hint="give the next_offset of the previous read, or 0",
            )
    return OutputRead(job, got.text, got.next_offset, got.size, since)
