"""The tests of tests/unit/test_fleet.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

from specialists.fleet.jobsource import JobSource
from tests.support.fleet import write_status
from tests.unit.test_fleet import (
    FakeClock,
    dead_pid,
    rows_by_id,
    store,  # noqa: F401 - fixtures
)


def test_dead_supervisor_is_recovered_on_the_health_pass(store):
    clock = FakeClock()
    write_status(store.jobs_dir, "0000dead", status="running", supervisor_pid=dead_pid())
    source = JobSource(store, clock=clock)
    source.refresh()
    row = rows_by_id(source)["0000dead"]
    assert row.status == "error" and row.activity == "supervisor crashed"
    reads = source.reads
    clock.now += 10
    source.refresh()  # recovery returned the final status it wrote: never read again
    assert source.reads == reads
