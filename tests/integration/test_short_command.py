"""run_short (process/short.py): short commands as values. Small real processes (sh, python)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from specialists.process.short import CommandResult, run_short
from specialists.process.spawn import DRAIN_LIMIT_S

PY = sys.executable


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def wait_gone(pid: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while alive(pid):
        assert time.monotonic() < deadline, f"process {pid} is still alive"
        time.sleep(0.02)


def test_output_code_and_stderr_come_back() -> None:
    """A command that fails is a result with its code and its last stderr line, no raise."""
    r = run_short(["sh", "-c", "echo out; echo first >&2; echo last >&2; exit 3"])
    assert (r.code, r.stdout, r.error, r.ok) == (3, "out\n", None, False)
    assert r.describe() == "`sh -c` exited with code 3: last"
    assert r.describe("bd show") == "`bd show` exited with code 3: last"
    ok = run_short(["true"])
    assert ok.ok and ok.code == 0 and ok.describe() == "`true` exited with code 0"


def test_a_missing_executable_is_a_result(tmp_path: Path) -> None:
    r = run_short([str(tmp_path / "no-such-tool"), "--version"])
    assert r.code is None and not r.ok
    assert r.error == "not installed or not on PATH"
    assert r.describe("no-such-tool") == "`no-such-tool` not installed or not on PATH"
    assert run_short(["no-such-tool-on-path-xyz"]).error == "not installed or not on PATH"


def test_a_directory_a_fifo_and_a_plain_file_are_not_executable(tmp_path: Path) -> None:
    """Each would make exec fail in its own way; each is one clear result."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    fifo.chmod(0o755)
    plain = tmp_path / "plain"
    plain.write_text("#!/bin/sh\necho hi\n")  # no x bit
    for path in (tmp_path, fifo, plain):
        r = run_short([str(path)])
        assert r.code is None and r.error is not None and "not executable" in r.error, path


def test_a_missing_working_directory_is_named(tmp_path: Path) -> None:
    r = run_short(["true"], cwd=tmp_path / "gone")
    assert r.error is not None and "gone" in r.error and "does not exist" in r.error


def test_nul_bytes_and_an_empty_argv_are_results() -> None:
    assert "null byte" in (run_short(["echo", "a\0b"]).error or "")
    assert run_short([]).error == "is an empty command"


def test_a_timeout_kills_the_whole_group() -> None:
    """The shell and the child it started both die; the call returns at the timeout."""
    code = (
        "import subprocess; p = subprocess.Popen(['sleep', '60']); "
        "print(p.pid, flush=True); p.wait()"
    )
    started = time.monotonic()
    r = run_short([PY, "-c", code], timeout=1.0)
    assert time.monotonic() - started < 1.0 + DRAIN_LIMIT_S + 5
    assert r.code is None and r.error == "timed out after 1s"
    wait_gone(int(r.stdout.split()[0]))


def test_a_child_holding_the_pipe_does_not_hold_the_call(tmp_path: Path) -> None:
    """The shell exits at once; its background child keeps stdout open for a minute."""
    pid_file = tmp_path / "pid"
    script = f"sleep 60 & echo $! > {pid_file}; echo done"
    started = time.monotonic()
    r = run_short(["sh", "-c", script], timeout=30)
    took = time.monotonic() - started
    try:
        assert r.ok and r.stdout == "done\n"
        assert took < 10, f"waited {took:.1f}s for a pipe held by a background child"
    finally:
        os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_a_child_that_floods_after_the_exit_is_cut_at_the_drain_limit() -> None:
    """A background child keeps writing to the inherited pipe: reading stops at the limit."""
    script = "yes flood & echo $! >&2; sleep 0.2; echo started"
    started = time.monotonic()
    r = run_short(["sh", "-c", script], timeout=30, output_cap=1 << 20)
    took = time.monotonic() - started
    os.kill(int(r.stderr.split()[0]), signal.SIGKILL)
    assert r.ok and "flood" in r.stdout
    assert took < DRAIN_LIMIT_S + 5 and len(r.stdout) <= 1 << 20


def test_output_is_capped_to_its_tail() -> None:
    code = "import sys; sys.stdout.write('a' * 3_000_000 + 'END')"
    r = run_short([PY, "-c", code], output_cap=1000)
    assert r.ok and len(r.stdout) == 1000 and r.stdout.endswith("aEND")


def test_input_is_fed_even_when_larger_than_a_pipe() -> None:
    data = b"x" * 1_000_000 + b"\n"
    r = run_short([PY, "-c", "import sys; print(len(sys.stdin.buffer.read()))"], input=data)
    assert r.ok and r.stdout.strip() == str(len(data))


def test_a_command_that_never_reads_its_input_does_not_hang() -> None:
    r = run_short(["sh", "-c", "exit 0"], input=b"y" * 5_000_000, timeout=30)
    assert r.ok


def test_stdin_is_dev_null_without_input() -> None:
    r = run_short(["cat"], timeout=10)
    assert r.ok and r.stdout == ""


def test_death_by_signal_is_named() -> None:
    r = run_short(["sh", "-c", "kill -TERM $$"])
    assert r.code is None and r.error == "was killed by SIGTERM"


def test_env_is_passed_as_given() -> None:
    r = run_short(
        ["sh", "-c", "echo $ONLY_THIS"], env={"ONLY_THIS": "yes", "PATH": "/usr/bin:/bin"}
    )
    assert r.stdout == "yes\n"


def test_results_are_frozen_values() -> None:
    r = run_short(["true"])
    assert isinstance(r, CommandResult)
    with pytest.raises(AttributeError):
        r.code = 1  # type: ignore[misc]
