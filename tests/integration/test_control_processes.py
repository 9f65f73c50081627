"""The tests of tests/unit/test_control.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from specialists.base.errors import UserError
from specialists.store import keys
from specialists.store.jobs import JobStore
from specialists.supervise.start import session_key, start
from tests.support.starting import FakeSupervisors
from tests.unit.test_control import (
    _job,
    continuing,
    store,  # noqa: F401 - fixtures
)


def _continue(root: str, source: str, go, out, stop) -> None:  # type: ignore[no-untyped-def]
    store = JobStore(Path(root), news=None)
    go.wait()
    try:
        out.put(start(store, continuing(store, source), check=False).id)
    except UserError:
        out.put(None)
    stop.wait(60)  # the winner's "supervisor" (this process, its lock) lives until then


def test_concurrent_continuations_from_processes_exactly_one_starts(
    store: JobStore,
    supervisors: FakeSupervisors,
) -> None:
    source = _job(store, "aaaaaaaa", status="done", session_file="/x")
    ctx = multiprocessing.get_context("fork")  # the children keep the faked supervisor launch
    go, out, stop = ctx.Event(), ctx.Queue(), ctx.Event()
    args = (str(store.root), source, go, out, stop)
    procs = [ctx.Process(target=_continue, args=args) for _ in range(6)]
    for p in procs:
        p.start()
    go.set()
    won = [r for r in (out.get(timeout=60) for _ in procs) if r is not None]
    stop.set()
    for p in procs:
        p.join(60)
    assert len(won) == 1 and keys.holder(store.root, session_key(source)) == won[0]
    assert sorted(store.list_ids()) == sorted([source, won[0]])  # the refused left nothing
