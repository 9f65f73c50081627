"""Helpers to make job records and stores in tests."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from specialists.store.control import ControlRequest, read_requests
from specialists.store.jobs import JobLock, JobStore, now_ms
from specialists.store.records import JobRecord, JobStatus
from specialists.supervise.launch import create_job

TYPE_CHECKING = False
if TYPE_CHECKING:
    from specialists.supervise.hooks import JobEnd

TEST_OWNER = "claude-tests"  # the owner test jobs are launched for


def notice_ids(store: JobStore, job_id: str, owner: str = TEST_OWNER) -> list[str]:
    """The ids of `job_id`'s notice events waiting in `owner`'s inbox (notices.py)."""
    from specialists.events.inbox import Inbox

    events = Inbox(store.root, owner).pending().events
    return [e.id for e in events if e.details.get("job_id") == job_id]


def make_record(cwd: Path, **overrides: Any) -> JobRecord:
    base = JobRecord(
        id="",
        specialist="tester",
        prompt="do it",
        task="do it",
        runner="scripted",
        model="mock/mock-model",
        cwd=str(cwd),
        created_at_ms=now_ms(),
        owner=[TEST_OWNER],  # so its completion notices are posted (notices.py)
    )
    return base.replace(**overrides)


def new_job(store: JobStore, cwd: Path, **overrides: Any) -> tuple[JobRecord, JobLock]:
    return create_job(store, make_record(cwd, **overrides))


# A specialist on the command runner (`cat` echoes the prompt back): real jobs, no model.
ECHO_SPEC = """\
metadata:
  name: echo
  description: echo back
execution:
  runner: {type: command, command: cat}
prompt:
  task_template: "$prompt"
"""


def echo_project() -> Path:
    """The test's project (SPECIALISTS_PROJECT_ROOT) with the `echo` specialist in it."""
    project = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (project / "specialists").mkdir(exist_ok=True)
    (project / "specialists" / "echo.specialist.yaml").write_text(ECHO_SPEC)
    return project


def wait_for(predicate: Callable[[], object], timeout: float = 20.0, what: str = "") -> None:
    """Poll `predicate` until it is true; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what or predicate}"
        time.sleep(0.01)


def job_end(
    store: JobStore,
    record: JobRecord,
    final: str,
    *,
    answer: str | None = None,
    error: str | None = None,
    status: JobStatus | None = None,
    recovered: bool = False,
) -> JobEnd:
    """The one end fact of `record` as its supervisor (or, `recovered`, crash recovery)
    tells it (supervise/news.py `tell`)."""
    from specialists.supervise.hooks import JobEnd

    return JobEnd(
        store=store,
        record=record,
        status=status or JobStatus(id=record.id, specialist=record.specialist, status=final),
        final=final,
        error=error,
        answer=answer,
        answers=0,
        now_ms=now_ms(),
        event=lambda *_, **__: None,
        report=lambda _: None,
        recovered=recovered,
    )


def control_requests(store: JobStore, job_id: str) -> list[dict[str, str]]:
    """The control requests sent to a job (store/control.py), taken or not, oldest first."""
    path = store.root / "owners" / f"job-{job_id}" / "events.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    events = [json.loads(line) for line in lines if line.strip()]
    return [
        {"kind": e["details"]["control"], "message": e["body"]}
        for e in events
        if e.get("kind") == "control"
    ]


def take_requests(job_dir: Path) -> tuple[list[ControlRequest], list[str]]:
    """Every control request waiting for the job, taken as its supervisor would take them."""
    taken: list[ControlRequest] = []
    problems = read_requests(job_dir, taken.append)
    return taken, problems
