"""`workflow resume` of a run that was resumed before: it names the newest resume, a planted
loop of claims ends (bounded), a claim whose holder was never created does not block, and a
`resume.lease` left by a release before 0.2 still counts as a resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specialists.base.errors import UserError
from specialists.features.workflows.launch import _not_resumed_already
from specialists.store import keys
from specialists.store.jobs import JobStore
from specialists.supervise.start import resume_key
from tests.support.fleet import write_status
from tests.support.jobs import new_job


def _ended_job(store: JobStore, tmp_path: Path) -> str:
    record, lock = new_job(store, tmp_path)
    lock.release()
    write_status(store.jobs_dir, record.id, status="error")
    return record.id


def _resumed(store: JobStore, source: str, holder: str) -> None:
    """`holder` resumed `source`: the claim its start made (a planted one may replace it)."""
    keys.claim(store.root, resume_key(source), holder, lambda _job: True)


def test_a_chain_names_its_newest_run_and_a_planted_loop_ends(tmp_path: Path) -> None:
    store = JobStore(tmp_path / ".specialists", news=None)
    store.ensure_dirs()
    a, b, c = (_ended_job(store, tmp_path) for _ in range(3))
    _resumed(store, a, b)
    _resumed(store, b, c)
    with pytest.raises(UserError, match=f"resumed already, as job {b}") as err:
        _not_resumed_already(store, a)
    assert f"workflow resume {c}" in (err.value.hint or "")
    _resumed(store, c, a)  # planted: a loop
    with pytest.raises(UserError, match="resumed already"):
        _not_resumed_already(store, a)


def test_a_claim_whose_holder_was_never_created_does_not_block(tmp_path: Path) -> None:
    store = JobStore(tmp_path / ".specialists", news=None)
    store.ensure_dirs()
    a = _ended_job(store, tmp_path)
    _resumed(store, a, "0badc0de")  # its creation failed: no directory
    _not_resumed_already(store, a)
    path = store.root / keys.KEYS_DIR / f"{keys._doc(resume_key(a))}.json"
    path.write_text("{not json")  # torn: free
    _not_resumed_already(store, a)


def test_a_lease_from_before_0_2_still_names_the_resume(tmp_path: Path) -> None:
    store = JobStore(tmp_path / ".specialists", news=None)
    store.ensure_dirs()
    a, b = (_ended_job(store, tmp_path) for _ in range(2))
    lease = {"holder": b, "pid": 2**22 + 7, "start_time": 1, "since_ms": 1}
    (store.job_dir(a) / "resume.lease").write_text(json.dumps(lease))
    with pytest.raises(UserError, match=f"resumed already, as job {b}"):
        _not_resumed_already(store, a)
    (store.job_dir(a) / "resume.lease").write_text("{not json")  # torn: free, as it was
    _not_resumed_already(store, a)
