"""An interrupt pauses the run's clock: the follow-up that resumes the paused job has what
was left of its timeout, neither a fresh one nor less for the time it sat paused (what
`steer --recover` promises: the original contract's remaining deadline). Fake clock."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from specialists.base.clock import FakeClock
from specialists.runners.base import Activity, RunFinished
from specialists.store.control import post_request
from specialists.store.records import JobStatus
from tests.support.supervising import Harness


class AlarmClock(FakeClock):
    """A fake clock that calls `fn` once when it passes `at` (a follow-up during a pause)."""

    def __init__(self) -> None:
        super().__init__()
        self.at: float | None = None
        self.fn: Callable[[], object] = lambda: None

    def sleep(self, seconds: float) -> None:
        super().sleep(seconds)
        if self.at is not None and self() >= self.at:
            self.at = None
            self.fn()


def _paused_then_resumed(tmp_path: Path, resumed_for: float) -> tuple[Harness, JobStatus]:
    h = Harness(tmp_path)
    clock = h.clock = AlarmClock()
    start = clock()
    clock.at = start + 150.0  # paused from ~50 s to 150 s: 100 s off the clock
    clock.fn = lambda: post_request(h.store.job_dir(h.job_id), "follow_up", "go on")
    runner = h.runner(
        [Activity("thinking"), 50.0, h.post("interrupt"), 500.0],
        follow_up_script=[resumed_for, RunFinished(text="second")],
    )
    status = h.run(runner, timeout_ms=60_000)
    return h, status


def test_the_resumed_run_has_the_rest_of_its_timeout(tmp_path: Path) -> None:
    """50 s before the pause, 100 s paused, 30 s after: 80 s of work > 60 s: timed out 10 s
    into the resumed run (a fresh deadline would have let it finish)."""
    h, status = _paused_then_resumed(tmp_path, 30.0)
    assert status.status == "error" and "timeout after 60s" in (status.error or "")
    kinds = h.kinds()
    assert kinds.index("interrupted") < kinds.index("follow_up_sent")


def test_the_pause_itself_does_not_count(tmp_path: Path) -> None:
    """5 s after the pause: 55 s of work, done, although 155 s passed since the start."""
    h, status = _paused_then_resumed(tmp_path, 5.0)
    assert status.status == "done", status
    assert h.result() == "second"
