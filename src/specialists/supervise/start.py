"""The one way a job starts: planned, created, then supervised by a detached process or by
this one. Every front and every feature that starts a job calls `start` (a test holds that no
other module creates a job or launches its supervisor: tests/unit/test_primitives.py).

The steps, and what a kill -9 after each leaves:

1. A key the caller has (a schedule's slot, a workflow child's attempt, a review round) that
   was claimed before answers at once with its job: "already exists". A claimed job that
   never got its supervisor (its status still says starting and nobody holds its lock: its
   starter died between steps 5 and 6) gets one now, through step 6.
2. Plan (the caller's function), look up the agent CLI, run-start housekeeping: nothing is
   on disk yet.
3. Create (launch.py): the id is an exclusive mkdir, and the job's lock is taken before any
   file is written and held until the supervisor has it. A kill here leaves an unclaimed job
   that recovery ends when it is read; the key is still free.
4. `created(record)`: what the caller writes before the job may run (a thread record, a
   journal line). Anything that fails from here to step 6 removes the job again.
5. Claim the key (store/keys.py). Lost to another start: our job is removed, theirs answers.
6. The supervisor: a detached process that inherits the lock, or this process (`run()`).
   One that cannot be started ends the job with the reason and frees its key.

Two keys come from the record itself, and refuse (naming the holder) instead of answering
with another start's job: resuming a workflow run (`resume:<run>`, once: a run is resumed
from its newest resume) and continuing a job's session (`session:<job>`, one at a time: two
jobs appending to one conversation could trust neither result; free again once its holder
has ended, however it ended).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path

from specialists.base.errors import Bug, SpecialistsError, UserError
from specialists.base.vocab import WORKFLOW_RUNNER
from specialists.store import keys
from specialists.store.files import remove_tree
from specialists.store.jobs import JobLock, JobStore
from specialists.store.records import JobRecord, JobStatus
from specialists.store.recovery import paused_at_limit, supervisor_alive
from specialists.supervise.checkpoint import revivable
from specialists.supervise.launch import create_job, spawn_reattaching, spawn_supervisor
from specialists.supervise.plan import housekeeping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from specialists.supervise.record import Observer
    from specialists.supervise.supervisor import Supervisor


class Started:
    """A started job: its id, whether its key had started it before, the pid of the
    supervisor this start detached, and, when this process supervises it, `run()`."""

    def __init__(
        self,
        job_id: str,
        *,
        existed: bool = False,
        pid: int | None = None,
        supervisor: Supervisor | None = None,
        lock: JobLock | None = None,
    ) -> None:
        self.id = job_id
        self.existed = existed
        self.pid = pid
        self._supervisor = supervisor
        self._lock = lock

    def run(self) -> JobStatus:
        """Supervise the job here to its end (from any thread, once); returns the final
        status. The job's lock is released however it ends."""
        supervisor, lock = self._supervisor, self._lock
        if supervisor is None or lock is None:
            raise Bug(f"job {self.id} is not supervised by this process, or ran already")
        self._supervisor = None
        try:
            return supervisor.run()
        finally:
            lock.release()


def start(
    store: JobStore,
    plan: JobRecord | Callable[[], JobRecord],
    *,
    key: str | None = None,
    created: Callable[[JobRecord], None] | None = None,
    here: bool = False,
    observer: Observer | None = None,
    handle_signals: bool = False,
    check: bool = True,
    housekeep: bool = False,
    warnings: list[str] | None = None,
) -> Started:
    """Start a job (the module docstring has the steps). `plan` is the record, or makes it
    (not called when `key` answers). `here`: supervised by this process, through `run()`
    (handle_signals only on the main thread). `check`: refuse a missing agent CLI before
    anything exists. `housekeep`: a run start's chores (gc, stale notices), into `warnings`.
    """
    if key is not None and (found := _already(store, key)) is not None:
        return found
    record = plan() if callable(plan) else plan
    what: str | None = None
    free: Callable[[str], bool] = lambda job: not store.job_dir(job).is_dir()  # noqa: E731
    if key is None:
        key, what, free = _own_key(store, record, free)
    runner = None
    if here:  # made first: an unknown runner leaves nothing on disk
        from specialists.runners.registry import job_runner

        runner = job_runner(record.runner, record.executor)
    if check:
        check_agent(record, store.root)
    if housekeep:
        problems = housekeeping(store)
        if warnings is not None:
            warnings.extend(problems)
    record, lock = create_job(store, record.replace(start_key=key))
    claimed = False
    try:
        if created is not None:
            created(record)
        if key is not None:
            holder = keys.claim(store.root, key, record.id, free)
            if holder != record.id:
                _remove(store, record.id, lock)
                if what is not None:
                    raise _refusal(store, what, holder)
                return _already(store, key) or Started(holder, existed=True)
            claimed = True
        if runner is not None:
            from specialists.supervise.supervisor import Supervisor

            supervisor = Supervisor(
                store, record, runner, observer=observer, handle_signals=handle_signals
            )
            return Started(record.id, supervisor=supervisor, lock=lock)
    except BaseException:
        if claimed and key is not None:
            keys.release(store.root, key, record.id)
        _remove(store, record.id, lock)
        raise
    try:
        pid = spawn_supervisor(store, record, lock)  # it ends the job itself if this fails
    except BaseException:
        if key is not None:
            keys.release(store.root, key, record.id)
        raise
    return Started(record.id, pid=pid)


def restart(state_dir: Path, job_id: str, lock_fd: int) -> int | str | None:
    """Crash recovery found the job's supervisor dead (store.news `revivers`, under the job's
    lock on `lock_fd`): start one that takes the job over and inherits the lock (its pid: a
    remote job's, or a local job paused at a usage limit, which it waits out); or why it
    cannot be (the job ends with that reason); or None (an ordinary crash)."""
    job_dir = state_dir / "jobs" / job_id
    verdict = revivable(job_dir)
    if verdict is False and _paused(state_dir, job_id):
        verdict = True
    if verdict is not True:
        return verdict or None
    try:
        return spawn_reattaching(job_dir, lock_fd)
    except OSError as exc:
        return f"no supervisor could be started to reattach: {exc.strerror or exc}"


def _paused(state_dir: Path, job_id: str) -> bool:
    try:
        status = JobStore(state_dir, news=None).read_status(job_id)
    except (SpecialistsError, OSError):
        return False
    return status is not None and paused_at_limit(status)


def _already(store: JobStore, key: str) -> Started | None:
    """The job `key` started, given a supervisor if it never got one; None: not started."""
    job_id = keys.holder(store.root, key)
    if job_id is None:
        return None
    try:
        lock = JobLock(store.job_dir(job_id))
    except FileNotFoundError:
        return None  # gone (collected): the key is free again
    handed = False
    try:
        if lock.try_acquire():  # nobody supervises it, nor is starting it
            status = store.read_status(job_id)
            if status is not None and status.status == "starting":
                record = store.read_record(job_id)  # its starter died after the claim
                handed = True
                spawn_supervisor(store, record, lock)
    finally:
        if not handed:
            lock.release()
    return Started(job_id, existed=True)


def _own_key(
    store: JobStore, record: JobRecord, gone: Callable[[str], bool]
) -> tuple[str | None, str | None, Callable[[str], bool]]:
    """A workflow resume's or a session continuation's key, what it guards, and when an
    earlier claim of it no longer holds (a session's: once its holder has ended)."""
    if record.runner == WORKFLOW_RUNNER:
        source = record.runner_options.get("resume_of")
        if isinstance(source, str) and source:
            return resume_key(source), f"job {source}'s workflow run", gone
        return None, None, gone
    source = continues_session(store, record)
    if source is None:
        return None, None, gone
    return session_key(source), f"job {source}'s session", lambda job: live(store, job) is None


def resume_key(run_id: str) -> str:
    return f"resume:{run_id}"


def session_key(job_id: str) -> str:
    return f"session:{job_id}"


def continues_session(store: JobStore, record: JobRecord) -> str | None:
    """The job whose session `record` continues (`specialists resume`, `run --continue`,
    MCP `continue_from`), or None: a thread's parent_id names its parent, not a session it
    continues, and a fork copies a session without continuing it."""
    if not record.parent_id or not record.resume_session or record.thread:
        return None
    try:
        st = store.read_status(record.parent_id)
    except (OSError, SpecialistsError):
        return None
    if st is None or st.session_file != record.resume_session:
        return None
    return record.parent_id


def live(store: JobStore, job_id: str) -> JobStatus | None:
    """`job_id`'s status while it lives: being created, or active with its supervisor alive
    (the pid and start time it names, or whoever holds its lock: a launcher that has
    exited before its supervisor wrote its own pid), else None."""
    try:
        st = store.read_status(job_id)
        if st is None:  # gone, or (before its claim) being created
            return JobStatus(id=job_id, specialist="?") if store.job_dir(job_id).is_dir() else None
        if st.active and supervisor_alive(st):
            return st
        if not st.active:
            return None
        lock = JobLock(store.job_dir(job_id))
    except (OSError, SpecialistsError):
        return None  # gone or unreadable: it cannot be shown to hold anything
    try:
        return None if lock.try_acquire() else st
    finally:
        lock.release()


def session_holder(store: JobStore, job_id: str) -> JobStatus | None:
    """The live job continuing `job_id`'s session now, if there is one."""
    holder = keys.holder(store.root, session_key(job_id))
    return live(store, holder) if holder is not None else None


def _refusal(store: JobStore, what: str, holder: str) -> UserError:
    st = live(store, holder)
    if st is None:  # a workflow run's resume, ended: resume that newer run instead
        return UserError(
            f"{what} was resumed already, as job {holder}",
            hint=f"resume the newest run of it: specialists workflow resume {holder}",
        )
    pid = f" (pid {st.supervisor_pid})" if st.supervisor_pid else ""
    return UserError(
        f"{what} is being resumed by job {holder}{pid}; one resume at a time",
        hint=f"wait for it or stop it: specialists status --job {holder}",
    )


def _remove(store: JobStore, job_id: str, lock: JobLock) -> None:
    """Undo a job that never started: nobody else may use it, as we hold its lock."""
    try:
        remove_tree(store.job_dir(job_id))
    finally:
        lock.release()


def check_agent(record: JobRecord, state: Path | None = None) -> None:
    """Raise AgentUnavailable (exit 3) when the job's agent CLI cannot be found (or pi has
    certainly no credential for the job's provider), so a missing agent is refused before
    a job exists rather than ending one at once. The runners look the binary up again when
    they start (it may change meanwhile); this is the same lookup.
    """
    env = os.environ
    options = record.runner_options
    if record.runner == "pi":
        from specialists.runners.pi import resolve_pi_command
        from specialists.runners.pi_credentials import check_pi_credential
        from specialists.runners.pi_protocol import split_pi_model

        resolve_pi_command(options, env, state)  # `state`: where Node's version is kept
        if not record.executor:  # on a node, the node's environment decides
            check_pi_credential(split_pi_model(record.model)[0], env)
    elif record.runner in ("claude", "codex"):
        from specialists.runners.base import LaunchSpec
        from specialists.runners.oneshot import find_binary

        module = importlib.import_module(f"specialists.runners.{record.runner}")
        spec = LaunchSpec(
            job_id="",
            job_dir=Path(record.cwd),
            cwd=Path(record.cwd),
            prompt="",
            system_prompt="",
            model=None,
            options=options,
        )
        find_binary(record.runner, spec, module.BIN_ENV, module.NOT_INSTALLED)
    elif record.runner == "command":
        from specialists.runners.command import command_argv, resolve_command

        resolve_command(command_argv(options)[0], env)
