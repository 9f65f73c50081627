"""The tests of tests/unit/test_supervisor_wake.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

from specialists.events.inbox import Inbox
from specialists.runners.base import RunFinished
from specialists.runners.testing import Call
from tests.support.supervising import Harness
from tests.unit.test_supervisor_wake import follow_ups, owner, set_timer


def test_a_full_disk_delays_a_wake_up_and_loses_nothing(tmp_path: Path) -> None:
    """The timer comes due while the disk is full: firing fails (reported once, the wait
    does not spin), nothing is half-written; once there is room it fires, late, and wakes."""
    from tests.support.tmpfs import fill, small_tmpfs

    with small_tmpfs(tmp_path / "disk", size="1m") as disk:
        h = Harness(disk)
        filler: list[Path] = []

        def full() -> None:
            filler.append(fill(disk))

        def room() -> None:
            filler[0].unlink()

        runner = h.runner(
            [set_timer(h, 10), Call(full), RunFinished("", yielded=True), 30.0, Call(room)],
            follow_up_script=[RunFinished(text="woken after the disk came back")],
        )
        status = h.run(runner)
        assert status.status == "done" and h.result() == "woken after the disk came back"
        (woken,) = follow_ups(runner)
        assert "(late by" in woken.message
        failures = [e for e in h.events() if "No space left" in str(e.get("message", ""))]
        assert len(failures) == 1  # one report, not one per poll
        assert not Inbox(h.store.root, owner(h)).has_pending()
