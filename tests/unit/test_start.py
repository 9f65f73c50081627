"""The one start (supervise/start.py) on a temp store, its supervisor launch faked: a key
starts one job however often, from however many threads; a claimed job that never got its
supervisor gets one; a claim whose job is gone is taken over; a failure at any step before
the supervisor leaves no job and a free key; gc takes a key with its job. (kill -9 at each
step, with real processes: tests/integration/test_schedules_real.py.)"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from specialists.base.errors import StoreError, UserError
from specialists.base.vocab import WORKFLOW_RUNNER
from specialists.store import keys
from specialists.store.gc import collect
from specialists.store.jobs import JobStore
from specialists.store.records import JobRecord
from specialists.supervise.launch import create_job
from specialists.supervise.start import resume_key, start
from tests.support.fleet import write_status
from tests.support.jobs import make_record
from tests.support.starting import FakeSupervisors

KEY = "schedule:nightly:1764550800000"


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    s = JobStore(tmp_path / ".specialists", news=None)
    s.ensure_dirs()
    return s


class Plans:
    """A planner that counts its calls (an answered key is not planned again)."""

    def __init__(self, store: JobStore) -> None:
        self.store = store
        self.calls = 0

    def __call__(self) -> JobRecord:
        self.calls += 1
        return make_record(self.store.root.parent, runner="command")


def test_a_key_starts_one_job_and_answers_with_it_after(
    store: JobStore, supervisors: FakeSupervisors
) -> None:
    plans = Plans(store)
    first = start(store, plans, key=KEY, check=False)
    again = start(store, plans, key=KEY, check=False)
    assert (first.existed, again.existed, again.id) == (False, True, first.id)
    assert plans.calls == 1 and store.list_ids() == [first.id] and supervisors.ids == [first.id]
    assert store.read_record(first.id).start_key == KEY
    assert (keys.read(store.root, KEY) or {})["job"] == first.id


def test_a_claimed_job_that_never_got_its_supervisor_gets_one(
    store: JobStore, supervisors: FakeSupervisors
) -> None:
    """Its starter died between the claim and the launch (status starting, lock free)."""
    record, lock = create_job(store, make_record(store.root.parent).replace(start_key=KEY))
    lock.release()
    keys.claim(store.root, KEY, record.id, lambda _job: False)
    plans = Plans(store)
    again = start(store, plans, key=KEY, check=False)
    assert again.existed and again.id == record.id and plans.calls == 0
    assert supervisors.ids == [record.id]  # its supervisor, started now
    assert start(store, plans, key=KEY, check=False).id == record.id
    assert supervisors.ids == [record.id]  # held now: not started twice


def test_a_claimed_job_that_ran_is_not_started_again(
    store: JobStore, supervisors: FakeSupervisors
) -> None:
    """Running with its supervisor dead, or ended: the job is the answer, recovery's to end."""
    for job_id, status in (("aaaaaaaa", "running"), ("bbbbbbbb", "done")):
        write_status(store.jobs_dir, job_id, status=status, supervisor_pid=2**22 + 7)
        keys.claim(store.root, f"k:{job_id}", job_id, lambda _job: False)
        assert start(store, Plans(store), key=f"k:{job_id}", check=False).id == job_id
    assert supervisors.started == []


def test_a_claim_whose_job_is_gone_is_taken_over(
    store: JobStore, supervisors: FakeSupervisors
) -> None:
    keys.claim(store.root, KEY, "0badc0de", lambda _job: False)  # collected, or undone
    got = start(store, Plans(store), key=KEY, check=False)
    claim = keys.read(store.root, KEY) or {}
    assert not got.existed and claim["job"] == got.id and claim["took_over"] == "0badc0de"
    assert supervisors.ids == [got.id]


def test_concurrent_starts_with_one_key_make_one_job(
    store: JobStore, supervisors: FakeSupervisors
) -> None:
    go = threading.Barrier(8)
    got: list[str] = []

    def one() -> None:
        go.wait()
        got.append(start(store, Plans(store), key=KEY, check=False).id)

    threads = [threading.Thread(target=one) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(got) == 8 and len(set(got)) == 1
    assert store.list_ids() == got[:1] and supervisors.ids == got[:1]  # the losers left nothing


def test_a_failure_before_the_supervisor_leaves_no_job_and_a_free_key(
    store: JobStore, supervisors: FakeSupervisors
) -> None:
    def broken(_record: JobRecord) -> None:
        raise StoreError("the thread record could not be written")

    with pytest.raises(StoreError, match="thread record"):
        start(store, Plans(store), key=KEY, created=broken, check=False)
    assert store.list_ids() == [] and keys.holder(store.root, KEY) is None
    assert start(store, Plans(store), key=KEY, check=False).existed is False


def test_a_supervisor_that_cannot_start_ends_its_job_and_frees_the_key(
    store: JobStore, supervisors: FakeSupervisors
) -> None:
    supervisors.fail = "No space left on device"
    with pytest.raises(StoreError, match="could not start the job's supervisor"):
        start(store, Plans(store), key=KEY, check=False)
    (failed,) = store.list_ids()
    status = store.read_status(failed)
    assert status is not None and status.status == "error" and "No space" in str(status.error)
    assert keys.holder(store.root, KEY) is None
    supervisors.fail = None
    assert start(store, Plans(store), key=KEY, check=False).id != failed


def test_gc_takes_a_key_with_its_job(store: JobStore, supervisors: FakeSupervisors) -> None:
    job = start(store, Plans(store), key=KEY, check=False).id
    supervisors.finish(job)
    report = collect(store, days=1, now=4_000_000_000)
    assert report.removed == [job] and keys.read(store.root, KEY) is None


def test_a_workflow_run_is_resumed_once(store: JobStore, supervisors: FakeSupervisors) -> None:
    """`resume:<run>`, from the record: a second resume is refused, naming the first, while
    it runs and after it has ended (the newer run is the one to resume)."""
    write_status(store.jobs_dir, "aaaaaaaa", status="done")
    resuming = make_record(
        store.root.parent, runner=WORKFLOW_RUNNER, runner_options={"resume_of": "aaaaaaaa"}
    )
    holder = start(store, resuming, check=False).id
    assert store.read_record(holder).start_key == resume_key("aaaaaaaa")
    with pytest.raises(UserError, match=f"being resumed by job {holder} \\(pid"):
        start(store, resuming, check=False)
    supervisors.finish(holder)
    with pytest.raises(UserError, match=f"was resumed already, as job {holder}") as err:
        start(store, resuming, check=False)
    assert f"workflow resume {holder}" in (err.value.hint or "")
    assert sorted(store.list_ids()) == sorted(["aaaaaaaa", holder])
