"""The tests of tests/unit/test_owner_notices.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from specialists.base.owner import (
    SESSION_ENV,
    agent_ancestor,
)
from specialists.events import notices
from tests.unit.test_owner_notices import (
    put_job,
    state,  # noqa: F401 - fixtures
)


def test_nearest_agent_ancestor_is_found_by_name_and_start_time(tmp_path):
    """A process named `claude` above us is the owner; its pid and start time identify it."""
    claude = tmp_path / "claude"
    claude.symlink_to("/bin/sh")
    probe = "from specialists.base.owner import agent_ancestor; print(agent_ancestor())"
    out = subprocess.run(
        [str(claude), "-c", f'"{sys.executable}" -c "{probe}"; true'],
        capture_output=True,
        text=True,
        timeout=30,
    )
    key = out.stdout.strip()
    assert key.startswith("agent-"), (key, out.stderr)
    pid, start = key.removeprefix("agent-").split(".")
    assert int(pid) > 1 and int(start) > 0
    assert agent_ancestor() != key  # not ours: pytest runs under no such process here


def test_a_session_that_never_closes_stdin_still_gets_its_events(state, tmp_path):
    """The host keeps stdin open: the hook stops waiting after a second and answers."""
    put_job(state, "0000000f", ["claude-live"])
    notices.retell(state, "0000000f")
    env = {**os.environ, SESSION_ENV: "live"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "specialists", "hook", "user-prompt-submit"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    assert proc.stdin is not None
    proc.stdin.write('{"session_id": "live"')  # never finished, never closed
    proc.stdin.flush()
    started = time.monotonic()
    out, _ = proc.communicate(timeout=30)
    assert "0000000f" in out and time.monotonic() - started < 20


def test_ten_megabytes_of_stdin_is_cut_not_fatal(state):
    put_job(state, "00000010", ["claude-big"])
    notices.retell(state, "00000010")
    env = {**os.environ, SESSION_ENV: "big"}
    out = subprocess.run(
        [sys.executable, "-m", "specialists", "hook", "user-prompt-submit"],
        input="x" * (10 * 1024 * 1024),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert out.returncode == 0 and "00000010" in out.stdout
