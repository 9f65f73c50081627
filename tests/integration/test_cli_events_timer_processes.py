"""The tests of tests/unit/test_cli_events_timer.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from specialists.events.inbox import Inbox
from tests.unit.test_cli_events_timer import (
    OWNER,
    SRC,
    read_until,
    root,  # noqa: F401 - fixtures
)


def test_events_follow_prints_new_events_as_they_arrive(root: Path) -> None:
    """A real process: `events --follow` prints an event appended after it started, then
    exits cleanly on SIGINT."""
    env = dict(os.environ)
    proc = subprocess.Popen(
        [sys.executable, "-m", "specialists", "events", "--follow", "--owner", OWNER],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        # A suite started in the background by a shell (`scripts/check &`) inherits SIGINT
        # ignored, and Python then installs no handler: give the child a terminal's default.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert proc.stdout is not None
        inbox = Inbox(root, OWNER)
        inbox.append("notice", SRC, "first event", source_id="f", seq=1)
        read_until(proc, "first event")  # shown at start, or followed: either way it runs
        inbox.append("notice", SRC, "second event", source_id="f", seq=2)
        read_until(proc, "second event")  # only following can show this one
    finally:
        proc.send_signal(2)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            status = Path(f"/proc/{proc.pid}/status").read_text()
            masks = [line for line in status.splitlines() if line.startswith("Sig")]
            proc.kill()
            raise AssertionError(
                f"SIGINT did not end events --follow; its signals: {masks}"
            ) from None
    assert proc.returncode == 0
