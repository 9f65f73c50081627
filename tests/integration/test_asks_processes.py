"""The tests of tests/unit/test_asks.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from specialists.asks import files
from specialists.asks.model import Ask
from specialists.asks.ops import ask
from specialists.errors import StoreError
from specialists.events.inbox import Inbox
from specialists.jobs.store import JobStore
from tests.unit.test_asks import (
    BOSS,
    _job,
    _race,
    store,  # noqa: F401 - fixtures
)


def test_concurrent_replies_from_processes_exactly_one_wins(
    store: JobStore, tmp_path: Path
) -> None:
    """Eight processes reply to one open ask at once: exactly one reply is taken, the other
    seven are told it is settled, and the outcome on disk is the winner's."""
    child = _job(store, tmp_path, owner=[BOSS])
    made = files.create(
        store.job_dir(child.id),
        lambda seq: Ask(f"ask-{child.id}-{seq}", child.id, "need_decision", "?", 1, 60.0, (BOSS,)),
    )
    ctx = multiprocessing.get_context("fork")
    go, out = ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_race, args=(str(store.root), made.id, f"answer {n}", go, out))
        for n in range(8)
    ]
    for p in procs:
        p.start()
    go.set()
    results = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(60)
    winners = [r for r in results if r is not None]
    assert len(winners) == 1
    settled = files.read_outcome(store.job_dir(child.id), 1)
    assert settled is not None and settled.answer == winners[0]


def test_a_full_disk_is_one_clear_error_and_leaves_no_half_made_ask(
    store: JobStore, tmp_path: Path
) -> None:
    from tests.support.tmpfs import fill, small_tmpfs

    child = _job(store, tmp_path, owner=[BOSS])
    with small_tmpfs(store.job_dir(child.id) / "asks", "64k") as asks_dir:
        fill(asks_dir)
        with pytest.raises(StoreError, match="could not be written") as caught:
            ask(store.root, child.id, "progress_update", "x" * 60_000, timeout_s=5)
        assert "free some space" in (caught.value.hint or "")
        assert files.list_seqs(store.job_dir(child.id)) == []
    assert not Inbox(store.root, BOSS).has_pending()
