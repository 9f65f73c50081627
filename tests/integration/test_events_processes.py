"""The tests of tests/unit/test_events.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from specialists.events.inbox import Inbox
from tests.unit.test_events import (
    OWNER,
    _produce,
    root,  # noqa: F401 - fixtures
)


def test_concurrent_producers_and_a_consumer_lose_nothing_and_duplicate_nothing(
    root: Path,
) -> None:
    workers, count = 4, 300
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_produce, args=(str(root), w, count)) for w in range(workers)]
    for p in procs:
        p.start()
    inbox = Inbox(root, OWNER)
    got: list[str] = []
    while any(p.is_alive() for p in procs) or inbox.has_pending():
        batch = inbox.take()
        assert batch.problems == ()
        got.extend(batch.ids)
        inbox.wait(0.05)
    for p in procs:
        p.join()
        assert p.exitcode == 0
    got.extend(inbox.take().ids)
    assert len(got) == len(set(got)) == workers * count
