"""Running a Supervisor in tests: a job, a fake clock it shares with a scripted runner.

`Harness.run` supervises one job to its end in the calling thread. The scripted runner's
`Call` steps (`Harness.post`) put control requests in the job's inbox at exact points of the
script, so request handling is tested without a second thread and without real time.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from specialists.base.clock import FakeClock
from specialists.runners.testing import Call, ScriptedRunner, Step
from specialists.store.control import post_request
from specialists.store.jobs import JobStore
from specialists.store.news import NEWS
from specialists.store.records import JobStatus
from specialists.supervise.supervisor import Supervisor
from tests.support.jobs import new_job


class Harness:
    """One job: a store, a fake clock shared by supervisor and runner, and its inbox."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.store = JobStore(tmp_path / ".specialists", news=NEWS)
        self.clock = FakeClock()
        self.job_id = ""
        self.supervisor: Supervisor | None = None

    def runner(self, script: Sequence[Step] = (), **kw: Any) -> ScriptedRunner:
        return ScriptedRunner(script, clock=self.clock, **kw)

    def post(self, kind: str, message: str = "") -> Call:
        """A script step that posts a control request to this job when reached."""
        return Call(lambda: post_request(self.store.job_dir(self.job_id), kind, message))  # type: ignore[arg-type]

    def run(
        self, scripted: ScriptedRunner, *, pending: Sequence[str] = (), **record: Any
    ) -> JobStatus:
        """Supervise a new job to its end; `pending` requests are in its inbox before."""
        rec, lock = new_job(self.store, self.tmp_path, **record)
        self.job_id = rec.id
        for kind in pending:
            post_request(self.store.job_dir(rec.id), kind, "more")  # type: ignore[arg-type]
        self.supervisor = Supervisor(
            self.store,
            rec,
            scripted,
            tick=0.1,
            clock=self.clock,
            sleep=self.clock.sleep,
            wall=self.clock,  # timers run on the same fake time
            handle_signals=False,
        )
        try:
            return self.supervisor.run()
        finally:
            lock.release()

    def events(self) -> list[dict[str, Any]]:
        return self.store.read_events(self.job_id)

    def kinds(self) -> list[str]:
        return [e["event"] for e in self.events()]

    def acks(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events() if e["event"] == f"{kind}_ack"]

    def result(self) -> str | None:
        return self.store.read_result(self.job_id)
