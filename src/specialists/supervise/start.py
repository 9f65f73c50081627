"""The one way a job starts: created, then supervised by a detached process or by this one.

Every front and every feature that starts a job comes here (through `Project` at the fronts,
directly below them): the agent CLI is checked before anything exists, run-start housekeeping
runs, the job directory is created exclusively, and its supervisor takes the job's lock.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

from specialists.base.errors import Bug
from specialists.store.jobs import JobLock, JobStore
from specialists.store.records import JobRecord, JobStatus
from specialists.supervise.checkpoint import revivable
from specialists.supervise.launch import create_job, spawn_reattaching, spawn_supervisor
from specialists.supervise.plan import housekeeping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from specialists.supervise.recorder import Observer
    from specialists.supervise.supervisor import Supervisor


def start_background(store: JobStore, record: JobRecord, warnings: list[str] | None) -> str:
    """Create the job and detach its supervisor; returns the job id at once."""
    check_agent(record)
    _housekeeping(store, warnings)
    record, lock = create_job(store, record)
    spawn_supervisor(store, record, lock)
    return record.id


def start_in_process(
    store: JobStore,
    record: JobRecord,
    observer: Observer | None = None,
    *,
    handle_signals: bool,
    warnings: list[str] | None = None,
) -> InProcessJob:
    """Create the job, supervised by this process: call `.run()` (any thread) to run it.

    The runner is made before the job exists, so an unknown runner leaves nothing on disk.
    Pass handle_signals=False off the main thread (Python allows signal handlers only there);
    the MCP server always does, its signals are its own.
    """
    from specialists.runners.registry import job_runner
    from specialists.supervise.supervisor import Supervisor

    runner = job_runner(record.runner, record.executor)
    check_agent(record)
    _housekeeping(store, warnings)
    record, lock = create_job(store, record)
    try:
        supervisor = Supervisor(
            store, record, runner, observer=observer, handle_signals=handle_signals
        )
    except BaseException:
        lock.release()
        raise
    return InProcessJob(record, supervisor, lock)


def restart(state_dir: Path, job_id: str, lock_fd: int) -> int | str | None:
    """Crash recovery found the job's supervisor dead (store.news `revivers`, under the job's
    lock on `lock_fd`): start one that takes the job over and inherits the lock (its pid);
    or why it cannot be (the job ends with that reason); or None (an ordinary crash)."""
    job_dir = state_dir / "jobs" / job_id
    verdict = revivable(job_dir)
    if verdict is not True:
        return verdict or None
    try:
        return spawn_reattaching(job_dir, lock_fd)
    except OSError as exc:
        return f"no supervisor could be started to reattach: {exc.strerror or exc}"


class InProcessJob:
    """A created job whose supervisor runs in this process, once."""

    def __init__(self, record: JobRecord, supervisor: Supervisor, lock: JobLock) -> None:
        self.record = record
        self.id = record.id
        self._supervisor = supervisor
        self._lock = lock
        self._ran = False

    def run(self) -> JobStatus:
        """Supervise the job to its end; returns the final status. The job's lock is released
        however it ends."""
        if self._ran:
            raise Bug(f"job {self.id} was run twice in this process")
        self._ran = True
        try:
            return self._supervisor.run()
        finally:
            self._lock.release()


def check_agent(record: JobRecord) -> None:
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

        resolve_pi_command(options, env)
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


def _housekeeping(store: JobStore, warnings: list[str] | None) -> None:
    problems = housekeeping(store)
    if warnings is not None:
        warnings.extend(problems)
