"""Jobs the MCP server supervises itself: the synchronous tools (use_specialist, run_parallel).

Each is started by `Project.start(..., here=True)` (the same path as a foreground
`specialists run`) and supervised in a worker thread of the server process. They belong to the
server: when it gets SIGTERM or its client goes away, `stop_all` asks each to stop and
kills its agent's process group. Background jobs (`run`) have their own detached supervisors
and are never tracked here.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from specialists.base.errors import Bug
from specialists.store.control import post_request
from specialists.store.jobs import JobStore
from specialists.store.records import JobRecord
from specialists.store.recovery import kill_agent

if TYPE_CHECKING:
    from specialists.project import Project

log = logging.getLogger("specialists.fronts.mcp")

# After a stop request, how long supervisors get to notice it (they read the inbox each tick)
# before their agents are killed outright.
STOP_NOTICE_S = 0.3


@dataclass
class _Running:
    thread: threading.Thread
    store: JobStore


class InProcessJobs:
    """The server's own jobs, by id, while their supervisor threads run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[str, _Running] = {}
        self._closed = False

    def start(self, project: Project, record: JobRecord, warnings: list[str] | None = None) -> str:
        """Create the job and supervise it in a new thread; returns its id at once."""
        with self._lock:
            if self._closed:
                raise Bug("job started after the server began shutting down")
            # Signals belong to the server (and only the main thread may set handlers).
            job = project.start(record, here=True, warnings=warnings)
            job_id = job.id

            def supervise() -> None:
                try:
                    job.run()
                finally:
                    with self._lock:
                        self._running.pop(job_id, None)

            thread = threading.Thread(target=supervise, name=f"job-{job_id}", daemon=True)
            self._running[job_id] = _Running(thread, project.store)
        thread.start()
        return job_id

    def wait(self, job_id: str, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the job's supervisor to end. True if it ended."""
        with self._lock:
            running = self._running.get(job_id)
        if running is None:
            return True
        running.thread.join(max(0.0, timeout))
        return not running.thread.is_alive()

    def ids(self) -> list[str]:
        with self._lock:
            return sorted(self._running)

    def stop_all(self, grace: float = 2.0) -> list[str]:
        """Stop every job of this server: stop request, agent killed, short wait for the end.

        Returns the ids that were still running. Safe to call twice; no new job starts after.
        """
        with self._lock:
            self._closed = True
            running = dict(self._running)
        if not running:
            return []
        for job_id, item in running.items():
            try:
                post_request(item.store.job_dir(job_id), "stop")
            except OSError as exc:
                log.warning("could not post a stop request to job %s: %s", job_id, exc)
        deadline = time.monotonic() + grace
        _join_all(running, time.monotonic() + min(STOP_NOTICE_S, grace))
        for job_id, item in running.items():
            if not item.thread.is_alive():
                continue
            try:
                status = item.store.read_status(job_id)
            except Exception as exc:  # noqa: BLE001 - keep stopping the others; logged
                log.warning("cannot read status of job %s to kill its agent: %s", job_id, exc)
                continue
            if status is not None:
                kill_agent(status, item.store.job_dir(job_id))
        _join_all(running, deadline)
        return sorted(running)


def _join_all(running: dict[str, _Running], deadline: float) -> None:
    for item in running.values():
        item.thread.join(max(0.0, deadline - time.monotonic()))
