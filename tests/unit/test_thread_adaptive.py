"""Adaptive concurrency (R-H11): the limit replayed from a parent's own history, its settings
checked as the seed says, and its refusal before anything is created."""

from __future__ import annotations

from pathlib import Path

import pytest

from specialists.base.errors import ConfigError, StoreError, UserError
from specialists.features.threads.limits import current_limit, limit_after, record_failed_launch
from specialists.features.threads.records import Closed, ThreadRecord, ThreadStore, new_thread_id
from specialists.native.tool_settings import (
    AdaptiveConcurrency,
    ThreadsSettings,
    settings_from_config,
)
from specialists.store.memory import MemoryRecord
from tests.support.starting import FakeSupervisors

CFG = AdaptiveConcurrency(
    enabled=True, min=1, initial=2, max=4, successes_to_increase=2, decrease_factor=0.5
)


def test_the_limit_grows_after_a_streak_shrinks_on_a_failure_and_stays_in_bounds() -> None:
    assert limit_after(CFG, []) == 2
    assert limit_after(CFG, [True]) == 2
    assert limit_after(CFG, [True, True]) == 3
    assert limit_after(CFG, [True] * 10) == 4  # capped at max
    assert limit_after(CFG, [True, True, False]) == 1  # 3 * 0.5 rounded down
    assert limit_after(CFG, [False, False, False]) == 1  # never below min
    assert limit_after(CFG, [True, False, True]) == 1  # a failure resets the streak


def _child(threads: ThreadStore, owner: str, closed_at: int | None, failed: bool) -> None:
    tid = new_thread_id()
    assert threads.reserve_id(tid)
    threads.write(ThreadRecord(tid, owner, ("root", tid), "0000abcd", "x", True, "command", 1))
    if closed_at is not None:
        from specialists.features.threads.records import Closing

        threads.begin_close(tid, Closing("child", None, closed_at))
        threads.finish_close(tid, Closed(by="child", at_ms=closed_at, failed=failed, final="done"))


@pytest.mark.parametrize("backend", ["file", "memory"])
def test_the_limit_is_replayed_from_closes_and_failed_launches_in_time_order(
    tmp_path: Path, backend: str
) -> None:
    """Two successes raise it to 3; a failed launch recorded after them halves it to 1; a
    child still open counts for nothing yet; another parent's history is not ours. The
    logic is the store's, so it holds on the memory Record as on the disk."""
    records = MemoryRecord("threads") if backend == "memory" else None
    threads = ThreadStore(tmp_path, records=records)
    _child(threads, "claude-a", 10, failed=False)
    _child(threads, "claude-a", 20, failed=False)
    _child(threads, "claude-a", None, failed=False)
    _child(threads, "claude-b", 5, failed=True)
    assert current_limit(threads, "claude-a", CFG) == 3
    record_failed_launch(threads, "claude-a", 30)
    assert current_limit(threads, "claude-a", CFG) == 1
    assert current_limit(threads, "claude-b", CFG) == 1


def test_failed_launches_journaled_by_0_1_0_still_count(tmp_path: Path) -> None:
    """0.1.0 kept them in `threads/spawn-<owner>.launch-failures`; they are read with the
    new journal's, oldest first, and a line a crash cut short is skipped."""
    threads = ThreadStore(tmp_path)
    threads.root.mkdir(parents=True)
    old = threads.root / "spawn-claude-a.launch-failures"
    old.write_bytes(b'{"at_ms": 5}\n{"at_ms": 6}\n{"at_')
    record_failed_launch(threads, "claude-a", 30)
    assert threads.failed_launches("claude-a") == [5, 6, 30]
    assert current_limit(threads, "claude-a", CFG) == 1  # 2 -> 1 -> 1 -> 1


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"min": 0}, "positive integer"),
        ({"initial": 9, "max": 4}, "min <= initial <= max"),
        ({"decreaseFactor": 1}, "strictly between 0 and 1"),
        ({"decreaseFactor": 0.0}, "strictly between 0 and 1"),
        ({"successesToIncrease": True}, "positive integer"),
        ({"enabled": "yes"}, "true or false"),
        ({"bogus": 1}, "unknown key threads.adaptiveConcurrency.bogus"),
    ],
)
def test_bad_settings_are_one_clear_error(table: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        settings_from_config({"threads": {"adaptiveConcurrency": table}})


def test_settings_are_read_in_the_seeds_names() -> None:
    raw = {
        "enabled": True,
        "min": 1,
        "initial": 2,
        "max": 5,
        "successesToIncrease": 4,
        "decreaseFactor": 0.25,
    }
    got = settings_from_config(
        {"threads": {"adaptiveConcurrency": raw}}
    ).threads.adaptive_concurrency
    assert got == AdaptiveConcurrency(True, 1, 2, 5, 4, 0.25)
    assert not settings_from_config({}).threads.adaptive_concurrency.enabled  # off by default


@pytest.mark.parametrize(("step", "counted"), [("create", True), ("start", True), ("plan", False)])
def test_a_failed_launch_lowers_the_limit_and_a_refusal_does_not(
    tmp_path: Path,
    step: str,
    counted: bool,
    monkeypatch: pytest.MonkeyPatch,
    supervisors: FakeSupervisors,
) -> None:
    """A launch that broke (the job could not be created or started) is a failure for R-H11;
    a refusal (here: an unknown specialist) is not. Either way nothing of the launch is left."""
    from specialists.features.sandbox.testing import FakeSandbox
    from specialists.features.threads.spawn import SpawnRequest, spawn_thread
    from tests.unit.test_thread_spawn import OWNER, failing

    state_root = tmp_path / ".specialists"
    with pytest.raises((UserError, StoreError)):
        spawn_thread(
            state_root,
            OWNER,
            None,
            tmp_path,
            SpawnRequest(
                "part", ("root",), fresh_context=True, **failing(step, monkeypatch, supervisors)
            ),
            sandboxes=FakeSandbox(tmp_path),
            now_ms=5,
            limits=ThreadsSettings(adaptive_concurrency=CFG),
        )
    threads = ThreadStore(state_root)
    assert threads.all()[0] == []
    assert current_limit(threads, OWNER, CFG) == (1 if counted else 2)
