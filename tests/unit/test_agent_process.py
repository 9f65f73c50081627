"""AgentProcess (runners/proc.py), the subprocess seam every CLI runner uses. Small real
processes (sh, python -c)."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from specialists.runners import proc as proc_module
from specialists.runners.proc import AgentProcess, OversizedLine

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
    while not (p.stdout_closed and p.poll_exit() is not None):
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
    assert lines[1:] == [OversizedLine(b"x" * proc_module.OVERSIZED_HEAD, 5000)]


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
