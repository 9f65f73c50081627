"""AgentProcess (process/agent.py), the subprocess seam every CLI runner uses. Small real
processes (sh, python -c)."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from specialists.process import agent as proc_module
from specialists.process.agent import AgentProcess, OversizedLine
from specialists.process.lines import OVERSIZED_HEAD
from specialists.process.spawn import DRAIN_LIMIT_S

PY = sys.executable


@pytest.fixture
def spawned() -> Iterator[list[AgentProcess]]:
    procs: list[AgentProcess] = []
    yield procs
    for p in procs:
        p.signal_group(signal.SIGKILL)
        p.wait(5)
        p.release()


def spawn(procs: list[AgentProcess], argv: list[str], **kw: object) -> AgentProcess:
    p = AgentProcess(argv, cwd=Path.cwd(), **kw)  # type: ignore[arg-type]
    procs.append(p)
    return p


def read_all(p: AgentProcess, timeout: float = 10.0) -> list[bytes | OversizedLine]:
    out: list[bytes | OversizedLine] = []
    deadline = time.monotonic() + timeout
    while not p.done:
        assert time.monotonic() < deadline, f"timed out; got {out}"
        out += p.read(0.1)
    return out


def gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return True
    return state == "Z"


def test_lines_by_default_raw_chunks_on_request(spawned: list[AgentProcess]) -> None:
    code = "import sys; sys.stdout.write('a\\nb\\npartial')"
    assert read_all(spawn(spawned, [PY, "-c", code])) == [b"a", b"b", b"partial"]
    raw = read_all(spawn(spawned, [PY, "-c", code], raw=True))
    assert all(isinstance(c, bytes) for c in raw)
    assert b"".join(c for c in raw if isinstance(c, bytes)) == b"a\nb\npartial"


def test_an_oversized_last_line_without_newline_is_reported(spawned: list[AgentProcess]) -> None:
    code = "import sys; sys.stdout.write('ok\\n' + 'x' * 5000)"
    lines = read_all(spawn(spawned, [PY, "-c", code], max_line=1000))
    assert lines[0] == b"ok"
    assert lines[1:] == [OversizedLine(b"x" * OVERSIZED_HEAD, 5000)]


def test_stderr_log_cap_is_a_parameter(tmp_path: Path, spawned: list[AgentProcess]) -> None:
    code = "import sys; sys.stderr.write('e' * 300000 + '\\nlast words\\n')"
    capped, full = tmp_path / "capped.log", tmp_path / "full.log"
    a = spawn(spawned, [PY, "-c", code], stderr_log=capped, stderr_cap=1000)
    b = spawn(spawned, [PY, "-c", code], stderr_log=full, stderr_cap=None)
    for p in (a, b):
        read_all(p)
        deadline = time.monotonic() + 10
        while not p.stderr_tail.endswith("last words\n"):
            assert time.monotonic() < deadline, "stderr was not read to its end"
            p.read(0.05)
        p.release()
    spawned.clear()
    assert capped.read_bytes() == b"e" * 1000 + b"\n[stderr.log capped]\n"
    assert full.read_bytes() == b"e" * 300000 + b"\nlast words\n"


def test_read_waits_when_both_pipes_closed_but_the_agent_lives(
    spawned: list[AgentProcess],
) -> None:
    # An agent that closes stdout and stderr but keeps running used to make read() return
    # at once, so a runner polling it spun a CPU at 100 % until the agent exited.
    p = spawn(spawned, ["sh", "-c", "exec >&- 2>&-; sleep 30"])
    calls = 0
    started = time.monotonic()
    while time.monotonic() - started < 0.5:
        p.read(0.1)
        calls += 1
    assert calls <= 10, f"read() returned {calls} times in 0.5 s"


def test_signal_group_after_exit_reaches_children_left_behind(
    tmp_path: Path, spawned: list[AgentProcess]
) -> None:
    code = (
        "import subprocess\n"
        "p = subprocess.Popen(['sleep', '30'], stdout=subprocess.DEVNULL)\n"
        "print(p.pid, flush=True)\n"
    )
    p = spawn(spawned, [PY, "-c", code])
    lines = read_all(p)
    assert p.returncode == 0
    child = int(lines[0])  # type: ignore[arg-type]
    assert not gone(child)
    p.signal_group(signal.SIGKILL)
    deadline = time.monotonic() + 5
    while not gone(child):
        assert time.monotonic() < deadline, "the child left behind survived signal_group"
        time.sleep(0.02)


def test_signal_group_spares_a_reused_pid(
    monkeypatch: pytest.MonkeyPatch, spawned: list[AgentProcess]
) -> None:
    p = spawn(spawned, ["true"])
    read_all(p)
    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "killpg", lambda pgid, sig: sent.append((pgid, sig)))
    monkeypatch.setattr(proc_module, "pid_exists", lambda pid: True)
    p.signal_group(signal.SIGKILL)  # the pid names a stranger now: its group is not ours
    assert sent == []
    monkeypatch.setattr(proc_module, "pid_exists", lambda pid: False)
    p.signal_group(signal.SIGKILL)
    assert sent == [(p.pid, signal.SIGKILL)]


def test_the_cap_marker_is_written_when_the_cap_falls_between_chunks(
    tmp_path: Path, spawned: list[AgentProcess]
) -> None:
    # 64 KiB reads: a 128 KiB cap is reached exactly at a chunk boundary.
    code = "import sys; sys.stderr.write('e' * (3 * 65536))"
    log = tmp_path / "stderr.log"
    p = spawn(spawned, [PY, "-c", code], stderr_log=log, stderr_cap=2 * 65536)
    read_all(p)
    deadline = time.monotonic() + 10
    while not log.read_bytes().endswith(b"]\n"):
        assert time.monotonic() < deadline, f"no cap marker; log has {log.stat().st_size} bytes"
        p.read(0.05)
    assert log.read_bytes() == b"e" * 2 * 65536 + b"\n[stderr.log capped]\n"


# --- the seam under pressure (issue 8 item 1, issue 7 item 1) ------------------------------


def test_a_shell_that_exits_while_its_child_holds_the_pipe_is_done_at_once(
    spawned: list[AgentProcess],
) -> None:
    """All the shell wrote is in the pipe when it exits: no waiting for the child's EOF."""
    p = spawn(spawned, ["sh", "-c", "sleep 60 & echo hi"])
    started = time.monotonic()
    assert read_all(p, timeout=DRAIN_LIMIT_S + 10) == [b"hi"]
    assert time.monotonic() - started < DRAIN_LIMIT_S + 5
    assert not p.stdout_closed  # the child still holds it; we did not wait for that


def test_a_child_flooding_the_pipe_after_the_exit_is_cut_at_the_drain_limit(
    spawned: list[AgentProcess],
) -> None:
    p = spawn(spawned, ["sh", "-c", "yes flood & sleep 0.3"], raw=True)
    started = time.monotonic()
    read_all(p, timeout=DRAIN_LIMIT_S + 20)
    assert p.done and time.monotonic() - started < 0.3 + DRAIN_LIMIT_S + 10


def test_an_agent_that_never_reads_a_large_prompt_does_not_hang_us(
    spawned: list[AgentProcess],
) -> None:
    p = spawn(spawned, ["sleep", "1"])
    started = time.monotonic()
    p.send(b"x" * 20_000_000)  # far more than a pipe holds
    p.end_input()
    assert time.monotonic() - started < 1.0, "send() blocked"
    assert p.input_pending
    read_all(p)
    assert p.returncode == 0 and p.input_broken and not p.input_pending


def test_a_slow_reader_gets_the_whole_prompt(spawned: list[AgentProcess]) -> None:
    code = (
        "import sys, time\n"
        "n = 0\n"
        "while chunk := sys.stdin.buffer.read(4096):\n"
        "    n += len(chunk); time.sleep(0.0005)\n"
        "print(n)\n"
    )
    p = spawn(spawned, [PY, "-c", code])
    p.send(b"y" * 3_000_000)
    p.end_input()
    assert read_all(p, timeout=60) == [b"3000000"]


def test_a_100_mb_line_costs_a_bounded_buffer(spawned: list[AgentProcess]) -> None:
    import tracemalloc

    code = (
        "import sys\n"
        "block = b'z' * (1 << 20)\n"
        "for _ in range(100): sys.stdout.buffer.write(block)\n"
        "sys.stdout.buffer.write(b'\\nafter\\n')\n"
    )
    p = spawn(spawned, [PY, "-c", code], max_line=1 << 20)
    tracemalloc.start()
    try:
        lines = read_all(p, timeout=120)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert lines == [OversizedLine(b"z" * OVERSIZED_HEAD, 100 << 20), b"after"]
    assert peak < 24 << 20, f"reading a 100 MB line peaked at {peak >> 20} MB"


def test_a_stderr_flood_neither_blocks_stdout_nor_fills_the_log(
    tmp_path: Path, spawned: list[AgentProcess]
) -> None:
    code = (
        "import sys\n"
        "for i in range(200):\n"
        "    sys.stderr.write('e' * 250_000)\n"
        "    print(i, flush=True)\n"
    )
    log = tmp_path / "stderr.log"
    p = spawn(spawned, [PY, "-c", code], stderr_log=log, stderr_cap=100_000)
    lines = read_all(p, timeout=120)
    assert lines == [str(i).encode() for i in range(200)]
    assert log.stat().st_size == 100_000 + len(b"\n[stderr.log capped]\n")


def test_signals_interrupting_the_reader_lose_nothing(spawned: list[AgentProcess]) -> None:
    """EINTR: a SIGALRM every millisecond while reading (PEP 475 retries must hold)."""
    hits = 0

    def on_alarm(_signum: int, _frame: object) -> None:
        nonlocal hits
        hits += 1

    code = "import time\nfor i in range(300):\n    print(i, flush=True); time.sleep(0.002)\n"
    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
    try:
        p = spawn(spawned, [PY, "-c", code])
        p.send(b"ignored\n")
        lines = read_all(p, timeout=60)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert lines == [str(i).encode() for i in range(300)]
    assert hits > 10


@pytest.mark.parametrize("kind", ["directory", "no x bit", "fifo", "missing"])
def test_a_binary_that_cannot_run_is_one_clear_error(tmp_path: Path, kind: str) -> None:
    """Neither spawning nor looking the binary up hangs on a FIFO or crashes on a directory."""
    from specialists.errors import AgentUnavailable
    from specialists.process.lookup import find_executable

    target = tmp_path / "agent"
    if kind == "directory":
        target.mkdir()
    elif kind == "no x bit":
        target.write_text("#!/bin/sh\necho hi\n")
    elif kind == "fifo":
        os.mkfifo(target)
        target.chmod(0o755)
    with pytest.raises(AgentUnavailable, match="cannot start agent") as err:
        AgentProcess([str(target)], cwd=tmp_path)
    assert "Traceback" not in err.value.one_line()
    with pytest.raises(AgentUnavailable, match="is not an executable file") as found:
        find_executable(str(target), path=None, not_installed="agent is not installed")
    assert str(target) in found.value.one_line()


def test_a_script_whose_interpreter_is_missing_is_named(tmp_path: Path) -> None:
    from specialists.errors import AgentUnavailable
    from specialists.process.lookup import find_executable

    script = tmp_path / "agent"
    script.write_text("#!/usr/bin/env no-such-interpreter-xyz\n")
    script.chmod(0o755)
    with pytest.raises(AgentUnavailable, match="needs `no-such-interpreter-xyz`"):
        find_executable("agent", path=str(tmp_path), not_installed="agent is not installed")
    with pytest.raises(AgentUnavailable) as err:
        find_executable("agent", path=str(tmp_path / "empty"), not_installed="x: npm i x")
    assert err.value.one_line() == "x: npm i x"


def test_exits_are_described_in_one_line() -> None:
    from specialists.process.agent import describe_exit

    assert describe_exit("claude", 1, None, "warming\nboom\n") == "claude exited with code 1: boom"
    assert describe_exit("codex", 0, None) == "codex exited with code 0"
    assert (
        describe_exit("agent", None, 9, "oom", when="before finishing")
        == "agent killed by SIGKILL before finishing: oom"
    )


def test_kill_job_reaches_a_grandchild_in_its_own_session(
    tmp_path: Path, spawned: list[AgentProcess]
) -> None:
    """pi's bash tool runs in a new session: the agent's group misses it, the job mark not."""
    from specialists.process.jobenv import agent_env

    script = "setsid sh -c 'trap \"\" TERM; sleep 300' & echo $!; sleep 300"
    p = spawn(spawned, ["sh", "-c", script], env=agent_env(tmp_path))
    lines: list[bytes | OversizedLine] = []
    deadline = time.monotonic() + 10
    while not lines:
        assert time.monotonic() < deadline
        lines = p.read(0.1)
    grandchild = int(lines[0])  # type: ignore[arg-type]
    p.signal_group(signal.SIGTERM)  # what stop did before: the grandchild ignores it anyway
    p.kill_job()
    deadline = time.monotonic() + 10
    while not gone(grandchild):
        assert time.monotonic() < deadline, "the setsid grandchild survived kill_job"
        time.sleep(0.02)
