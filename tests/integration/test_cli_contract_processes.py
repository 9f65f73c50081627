"""The tests of tests/unit/test_cli_contract.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import json
import os

from specialists.jobs.liveness import process_start_time
from tests.unit.test_cli_contract import _events, cli, job_with, root, store  # noqa: F401 - fixtures


def test_timeout_units_follow_the_seed(capsys, store, root):
    """A bare number is milliseconds (seed 000: `--timeout <ms>`); units are accepted."""
    for text, ms in (("90000", 90_000), ("500ms", 500), ("30s", 30_000), ("5m", 300_000)):
        code, out, err = cli(
            capsys, "run", "echo", "--prompt", "x", "--timeout", text, "--json", "--no-beads"
        )
        assert code == 0, err
        job_id = json.loads(out)["id"]
        assert store.read_record(job_id).timeout_ms == ms
    code, _, err = cli(capsys, "run", "echo", "--prompt", "x", "--timeout", "90", "--json")
    assert code == 0 and "--timeout 90 is 90 ms" in err  # a nudge, not a refusal


def test_feed_shows_active_jobs_and_follow_does_not_replay_finished_ones(capsys, store, root):
    """Before: `feed --follow` printed every finished job's events (5,124 lines for one live
    job of 8 events). Now: only the live job's, then new ones as they come."""
    import subprocess
    import sys

    for _ in range(20):
        done = job_with(store, root, status="done")
        _events(store, done, 50, final="done")
    live = job_with(
        store,
        root,
        status="running",
        supervisor_pid=os.getpid(),
        supervisor_start_time=process_start_time(os.getpid()),
    )
    _events(store, live, 8, final=None)
    code, out, _ = cli(capsys, "feed")
    assert code == 0 and len(out.splitlines()) == 8
    assert all(line.startswith(f"[{live}]") for line in out.splitlines())
    proc = subprocess.Popen(
        [sys.executable, "-m", "specialists", "feed", "--follow"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(8)]
        assert all(line.startswith(f"[{live}]") for line in lines)
        _events(store, live, 0, final="done")  # the live job ends: its final event follows
        assert " done" in proc.stdout.readline()
    finally:
        proc.kill()
        proc.wait(10)
