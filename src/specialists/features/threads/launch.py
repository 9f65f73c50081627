"""The real `JobStarter`: plans and starts a child job the way every interface starts a job.

This is the thread room's one edge upward: the job is planned by `supervise.plan` (the
specialist, runner, model and task template, resolved as `specialists run` does) and started
by `supervise.launch` (a detached supervisor). Imported only when a thread is spawned, so no
module-level edge leads from the tool table to the supervisor.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from specialists.base.errors import Bug
from specialists.features.threads.spawn import ChildPlan
from specialists.features.threads.state import job_store
from specialists.store.locks import JobLock
from specialists.store.records import JobRecord


class ProjectStarter:
    def __init__(self, state_root: Path) -> None:
        self.store = job_store(state_root)
        self._released: set[int] = set()  # handles whose lock is already let go

    def plan(self, plan: ChildPlan) -> JobRecord:
        from specialists.supervise.plan import JobRequest, plan_job

        request = JobRequest(
            plan.specialist,
            plan.prompt,
            cwd=plan.cwd,
            runner=plan.runner,
            model=plan.model,
            track_bead=False,  # a thread reports to its parent, not to a bead
        )
        # The agent CLI is not looked up here (that lookup lives with the interfaces, above
        # the tool table): a missing one ends the child at once, and its parent hears that
        # as a failed child_closed naming the missing command.
        return plan_job(self.store, request)

    def create(self, record: JobRecord) -> tuple[JobRecord, object]:
        from specialists.supervise.launch import create_job

        return create_job(self.store, record)

    def start(self, record: JobRecord, handle: object) -> None:
        from specialists.supervise.launch import spawn_supervisor

        try:
            spawn_supervisor(self.store, record, _lock(handle))
        finally:  # started or not, the launcher has let go of the lock (and recorded a failure)
            self._released.add(id(handle))

    def release(self, handle: object) -> None:
        """Give up a created job. One never started is removed (R-H7a: no record that
        looks like it may yet run); one whose start failed keeps its recorded error."""
        if id(handle) in self._released:  # never close a descriptor number twice
            return
        self._released.add(id(handle))
        lock = _lock(handle)
        try:
            shutil.rmtree(lock.path, ignore_errors=True)  # we hold its lock: nobody else uses it
        finally:
            lock.release()

    def session_of(self, job: JobRecord) -> str | None:
        status = self.store.read_status(job.id)
        ref = status.session_file if status else None
        if job.runner in AGENT_SESSION_IDS:
            return ref or None
        path = Path(ref) if ref else self.store.job_dir(job.id) / "session.jsonl"
        return str(path) if path.is_file() else None


# Runners whose session is the agent's own id (its files live in the agent's own home).
AGENT_SESSION_IDS = frozenset({"claude", "codex"})


def _lock(handle: object) -> JobLock:
    if not isinstance(handle, JobLock):
        raise Bug(f"a created job's handle is {type(handle).__name__}, not its lock")
    return handle
