"""The project one command (or one MCP server) works in, opened once and passed in.

`specialists.cli.main` builds a `Project` before dispatching and hands it to the command;
the MCP server builds one at start and keeps it in its context. Everything an interface does
to a project goes through here: planning a job (with its owner), starting it in the
background, or running it in this very process (a foreground run, the MCP server's
synchronous tools), so every interface does those steps in the same order and fails the
same way.

The root is found lazily (`SPECIALISTS_PROJECT_ROOT`, else the nearest directory above the
working directory holding `.specialists/` or `.git`): commands that never touch a project
(`hook`, `install --user`) never look for one.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from specialists.errors import Bug
from specialists.jobs.paths import find_project_root, state_dir
from specialists.news import NEWS

# `typing` and the store cost milliseconds; `hook` never needs them, so only type checkers
# (and the commands that touch the store) import them.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from specialists.jobs.records import JobRecord, JobStatus
    from specialists.jobs.store import JobLock, JobStore
    from specialists.owner import Owner
    from specialists.supervise.plan import JobRequest
    from specialists.supervise.supervisor import Observer, Supervisor


class Project:
    """A project root and its job store, found once."""

    __slots__ = ("_owner", "_root", "_start", "_store")

    def __init__(self, root: Path | None = None, *, start: Path | None = None) -> None:
        self._root = root
        self._start = start
        self._store: JobStore | None = None
        self._owner: Owner | None = None

    @property
    def root(self) -> Path:
        if self._root is None:
            self._root = find_project_root(self._start)
        return self._root

    @property
    def store(self) -> JobStore:
        if self._store is None:
            from specialists.jobs.store import JobStore

            self._store = JobStore(state_dir(self.root), news=NEWS)
        return self._store

    @property
    def owner(self) -> Owner:
        """Who this process launches jobs for (see owner.py): found once, on first use."""
        if self._owner is None:
            from specialists.owner import launching_owner

            self._owner = launching_owner()
        return self._owner

    # --- launching -------------------------------------------------------------------------

    def plan(
        self, request: JobRequest, *, foreground: bool, warnings: list[str] | None = None
    ) -> JobRecord:
        """The launch record for `request`, addressed to this process's owner. Problems that
        do not stop the run (a bead that could not be created) are added to `warnings`."""
        from specialists.supervise.plan import plan_job

        record = plan_job(self.store, request, foreground=foreground, warnings=warnings)
        return record.replace(owner=list(self.owner.keys))

    def start_background(self, record: JobRecord, warnings: list[str] | None = None) -> str:
        """Create the job and detach its supervisor; returns the job id at once."""
        from specialists.supervise.launch import create_job, spawn_supervisor

        check_agent(record)
        _housekeeping(self.store, warnings)
        record, lock = create_job(self.store, record)
        spawn_supervisor(self.store, record, lock)
        return record.id

    def start_in_process(
        self,
        record: JobRecord,
        observer: Observer | None = None,
        *,
        handle_signals: bool,
        warnings: list[str] | None = None,
    ) -> InProcessJob:
        """Create the job, supervised by this process: call `.run()` (any thread) to run it.

        The runner is made before the job exists, so an unknown runner leaves nothing on
        disk. Pass handle_signals=False off the main thread (Python allows signal handlers
        only there); the MCP server always does, its signals are its own.
        """
        from specialists.executors.choose import job_runner
        from specialists.supervise.launch import create_job
        from specialists.supervise.supervisor import Supervisor

        runner = job_runner(record.runner, record.executor)
        check_agent(record)
        _housekeeping(self.store, warnings)
        record, lock = create_job(self.store, record)
        try:
            supervisor = Supervisor(
                self.store, record, runner, observer=observer, handle_signals=handle_signals
            )
        except BaseException:
            lock.release()
            raise
        return InProcessJob(record, supervisor, lock)


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
    a job exists rather than ending one at once. The runners look
    the binary up again when they start (it may change meanwhile); this is the same lookup.
    """
    import os

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
    from specialists.supervise.plan import housekeeping

    problems = housekeeping(store)
    if warnings is not None:
        warnings.extend(problems)
