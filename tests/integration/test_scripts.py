"""Pre/post scripts (supervise/scripts.py) over the short-command helper: real /bin/sh."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from specialists.supervise import scripts
from specialists.supervise.scripts import run_script


def test_output_and_failure_are_reported(tmp_path: Path) -> None:
    ok = run_script("echo hello", tmp_path)
    assert (ok.exit_code, ok.output, ok.error, ok.ok) == (0, "hello\n", None, True)
    bad = run_script("echo partial; echo why >&2; exit 3", tmp_path)
    assert (bad.exit_code, bad.output, bad.error) == (3, "partial\n", "exit 3: why")


def test_a_background_child_holding_the_output_does_not_hold_the_job(tmp_path: Path) -> None:
    """`server &` in a script used to keep the captured pipe open until the child ended."""
    started = time.monotonic()
    outcome = run_script(f"sleep 60 & echo $! > {tmp_path}/pid; echo started", tmp_path)
    try:
        assert outcome.ok and outcome.output == "started\n"
        assert time.monotonic() - started < 10
    finally:
        os.kill(int((tmp_path / "pid").read_text()), signal.SIGKILL)


def test_a_script_past_its_timeout_is_killed(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(scripts, "SCRIPT_TIMEOUT_S", 0.5)
    outcome = run_script("echo begun; sleep 60", tmp_path)
    assert outcome.exit_code is None and outcome.output == "begun\n"
    assert outcome.error == "timed out after 0.5s"


def test_output_is_capped_to_its_tail(tmp_path: Path) -> None:
    outcome = run_script("head -c 200000 /dev/zero | tr '\\0' a; echo END", tmp_path)
    assert outcome.ok and len(outcome.output) == scripts.OUTPUT_CAP
    assert outcome.output.endswith("aEND\n")


def test_a_missing_cwd_is_an_error_not_a_crash(tmp_path: Path) -> None:
    outcome = run_script("true", tmp_path / "gone")
    assert outcome.exit_code is None and "does not exist" in (outcome.error or "")
