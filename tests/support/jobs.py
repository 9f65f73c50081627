"""Helpers to make job records and stores in tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specialists.jobs.records import JobRecord
from specialists.jobs.store import JobLock, JobStore, now_ms
from specialists.supervise.launch import create_job

TEST_OWNER = "claude-tests"  # the owner test jobs are launched for


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
