"""`workflow resume` of a run that was resumed before: it names the newest resume, a planted
loop of leases ends (bounded), and a lease whose holder was never created does not block."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specialists.base.errors import UserError
from specialists.features.workflows.launch import _not_resumed_already
from specialists.store.jobs import JobStore
from specialists.supervise.lease import LEASE_FILE
from tests.support.fleet import write_status
from tests.support.jobs import new_job


def _ended_job(store: JobStore, tmp_path: Path) -> str:
    record, lock = new_job(store, tmp_path)
    lock.release()
    write_status(store.jobs_dir, record.id, status="error")
    return record.id


def _lease(store: JobStore, source: str, holder: str) -> None:
    lease = {"holder": holder, "pid": 2**22 + 7, "start_time": 1, "since_ms": 1}
    (store.job_dir(source) / LEASE_FILE).write_text(json.dumps(lease))


def test_a_chain_names_its_newest_run_and_a_planted_loop_ends(tmp_path: Path) -> None:
    store = JobStore(tmp_path / ".specialists", news=None)
    store.ensure_dirs()
    a, b, c = (_ended_job(store, tmp_path) for _ in range(3))
    _lease(store, a, b)
    _lease(store, b, c)
    with pytest.raises(UserError, match=f"resumed already, as job {b}") as err:
        _not_resumed_already(store, a)
    assert f"workflow resume {c}" in (err.value.hint or "")
    _lease(store, c, a)  # planted: a loop
    with pytest.raises(UserError, match="resumed already"):
        _not_resumed_already(store, a)


def test_a_lease_whose_holder_was_never_created_does_not_block(tmp_path: Path) -> None:
    store = JobStore(tmp_path / ".specialists", news=None)
    store.ensure_dirs()
    a = _ended_job(store, tmp_path)
    _lease(store, a, "0badc0de")  # its creation failed: no directory
    _not_resumed_already(store, a)
    (store.job_dir(a) / LEASE_FILE).write_text("{not json")  # torn: free, as the lease says
    _not_resumed_already(store, a)
