"""The tests of tests/unit/test_control.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import multiprocessing

from specialists.jobs.store import JobStore
from specialists.supervise import lease
from tests.unit.test_control import (
    _claim,
    _job,
    store,  # noqa: F401 - fixtures
)


def test_concurrent_claims_from_processes_exactly_one_wins(store: JobStore) -> None:
    _job(store, "aaaaaaaa", status="done")
    holders = [_job(store, f"{n:08x}", status="running") for n in range(0xB0, 0xB6)]
    ctx = multiprocessing.get_context("fork")
    go, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_claim, args=(str(store.root), h, go, out)) for h in holders]
    for p in procs:
        p.start()
    go.set()
    won = [r for r in (out.get(timeout=60) for _ in procs) if r is not None]
    for p in procs:
        p.join(60)
    assert len(won) == 1 and lease.read_lease(store, "aaaaaaaa").holder == won[0]  # type: ignore[union-attr]
