"""The one start (supervise/start.py) without a process: jobs are created for real on the
test's store, and the supervisor launch is recorded instead of started.

A job started so counts as running (status "starting", naming this live process) and its lock
stays held, as a real supervisor holds it, until the test `finish`es it. `fail` makes the
next launches fail as a real one does: the job ends with the reason, StoreError is raised.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from specialists.base.errors import StoreError
from specialists.store.jobs import JobLock, JobStore
from specialists.store.records import JobRecord
from tests.support.fleet import write_status


@dataclass
class FakeSupervisors:
    started: list[JobRecord] = field(default_factory=list)
    fail: str | None = None
    _held: dict[str, tuple[JobStore, JobLock]] = field(default_factory=dict)

    def __call__(self, store: JobStore, record: JobRecord, lock: JobLock) -> int:
        if self.fail is not None:
            from specialists.supervise.launch import _record_launch_failure

            message = f"could not start the job's supervisor: {self.fail}"
            _record_launch_failure(store, record.id, message)
            lock.release()
            raise StoreError(message)
        self.started.append(record)
        self._held[record.id] = (store, lock)
        return os.getpid()

    @property
    def ids(self) -> list[str]:
        return [r.id for r in self.started]

    def running(self) -> list[str]:
        return [job_id for job_id in self.ids if job_id in self._held]

    def finish(self, *job_ids: str, status: str = "done") -> None:
        """End these jobs (all still running when none is named), releasing their locks."""
        for job_id in job_ids or tuple(self._held):
            store, lock = self._held.pop(job_id)
            write_status(
                store.jobs_dir,
                job_id,
                status=status,
                specialist=store.read_status(job_id).specialist,
            )  # type: ignore[union-attr]
            lock.release()

    def close(self) -> None:
        for _store, lock in self._held.values():
            lock.release()
        self._held.clear()
