"""Command runner (external-cli profile). Pure parts first; the rest runs small real
commands (python -c, sleep), as the runner's whole job is a process."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specialists.base.errors import AgentUnavailable, Bug, ConfigError
from specialists.runners.base import (
    Activity,
    AgentExited,
    AnswerDelta,
    FollowUp,
    Kill,
    LaunchSpec,
    RunFinished,
    RunnerEvent,
    Terminate,
)
from specialists.runners.command import (
    ANSWER_TAIL,
    STDOUT_LOG,
    CommandRunner,
    TailBuffer,
    command_argv,
    command_input,
)

PY = sys.executable


def spec(tmp_path: Path, command: str = PY, args: list[str] | None = None, **kw: Any) -> LaunchSpec:
    base: dict[str, Any] = {
        "job_id": "j1",
        "job_dir": tmp_path,
        "cwd": tmp_path,
        "prompt": "the task",
        "system_prompt": "the rules",
        "model": None,
        "options": {"command": command, "args": args or []},
    }
    base.update(kw)
    return LaunchSpec(**base)


def run_py(tmp_path: Path, code: str, **kw: Any) -> tuple[CommandRunner, list[RunnerEvent]]:
    runner = CommandRunner()
    runner.start(spec(tmp_path, PY, ["-c", code], **kw))
    return runner, drive(runner, exited)


def drive(
    runner: CommandRunner, until: Callable[[list[RunnerEvent]], bool], timeout: float = 15.0
) -> list[RunnerEvent]:
    events: list[RunnerEvent] = []
    deadline = time.monotonic() + timeout
    while not until(events):
        assert time.monotonic() < deadline, f"timed out; got {events}"
        events += runner.poll(0.1)
    return events


def exited(events: list[RunnerEvent]) -> bool:
    return any(isinstance(e, AgentExited) for e in events)


def of(events: list[RunnerEvent], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


# --- pure -------------------------------------------------------------------------------


def test_options_are_validated() -> None:
    assert command_argv({"command": "aider", "args": ["--yes"]}) == ["aider", "--yes"]
    assert command_argv({"command": "aider"}) == ["aider"]
    for bad in ({}, {"command": ""}, {"command": 3}, {"command": "x", "args": "a b"}):
        with pytest.raises(ConfigError):
            command_argv(bad)
    with pytest.raises(ConfigError, match="list of strings"):
        command_argv({"command": "x", "args": ["ok", 1]})
    assert command_argv({"command": "x", "promptDelivery": "stdin"}) == ["x"]
    with pytest.raises(ConfigError, match="prompt delivery 'argv'"):
        command_argv({"command": "x", "promptDelivery": "argv"})


def test_input_joins_system_prompt_and_task(tmp_path: Path) -> None:
    assert command_input(spec(tmp_path)) == "the rules\n\nthe task"
    assert command_input(spec(tmp_path, system_prompt="")) == "the task"


def test_tail_buffer_keeps_the_end_and_whole_characters() -> None:
    tail = TailBuffer(limit=10)
    tail.add(b"0123456789")
    tail.add("é".encode() * 3)  # 6 bytes: the cut falls on a character boundary
    assert tail.text() == "6789ééé" and tail.total == 16
    odd = TailBuffer(limit=3)
    odd.add(b"ab" + "é".encode() * 2)  # keeps b"\xa9" + "é": a dangling continuation byte
    assert odd.text() == "é"


# --- processes --------------------------------------------------------------------------


def test_stdout_is_the_answer_and_stdin_is_closed(tmp_path: Path) -> None:
    # The command reads stdin to EOF: it would hang if the runner left stdin open.
    code = "import sys; data = sys.stdin.read(); print('got:' + data.replace(chr(10), '|'))"
    _, events = run_py(tmp_path, code)
    (fin,) = of(events, RunFinished)
    assert fin == RunFinished(text="got:the rules||the task\n")
    assert of(events, AgentExited)[0].exit_code == 0
    assert events.index(fin) < len(events) - 1  # RunFinished before AgentExited
    # The runner says the command is up at once (a command has no start-up we can tell),
    # then its output follows.
    assert [a.event for a in of(events, Activity)][:2] == ["agent_start", "text"]
    assert "".join(e.text for e in of(events, AnswerDelta)) == "got:the rules||the task\n"
    assert (tmp_path / STDOUT_LOG).read_text() == "got:the rules||the task\n"


def test_only_the_last_64_kib_is_kept_but_all_is_logged(tmp_path: Path) -> None:
    code = "import sys\nfor i in range(20000): sys.stdout.write(f'line {i:06d}\\n')"
    _, events = run_py(tmp_path, code)
    (fin,) = of(events, RunFinished)
    assert len(fin.text.encode()) == ANSWER_TAIL
    assert fin.text.endswith("line 019999\n")
    log = (tmp_path / STDOUT_LOG).read_text()
    assert log.startswith("line 000000\n") and len(log) == 20000 * 12


def test_failure_names_exit_code_and_last_stderr_line(tmp_path: Path) -> None:
    code = "import sys; print('partial'); sys.stderr.write('warming up\\nit broke\\n'); sys.exit(4)"
    _, events = run_py(tmp_path, code)
    (fin,) = of(events, RunFinished)
    assert fin.text is None and fin.error == "command exited with code 4: it broke"
    assert of(events, AgentExited)[0].exit_code == 4
    assert (tmp_path / "stderr.log").read_text() == "warming up\nit broke\n"


def test_no_shell(tmp_path: Path) -> None:
    runner = CommandRunner()
    runner.start(spec(tmp_path, PY, ["-c", "import sys; print(sys.argv[1:])", "$HOME", "a b;c"]))
    events = drive(runner, exited)
    assert of(events, RunFinished)[0].text == "['$HOME', 'a b;c']\n"


def test_command_that_ignores_a_huge_prompt_does_not_hang_us(tmp_path: Path) -> None:
    runner = CommandRunner()
    big = "p" * (4 * 1024 * 1024)
    started = time.monotonic()
    runner.start(spec(tmp_path, "sleep", ["30"], prompt=big))
    assert time.monotonic() - started < 2  # start never blocks on the pipe
    # Only the word that the command is up: no output, and no wait on the pipe.
    assert [type(e).__name__ + ":" + e.event for e in runner.poll(0.2)] == ["Activity:agent_start"]
    runner.send(Terminate())
    events = drive(runner, exited)
    assert of(events, RunFinished)[0].error == "command killed by SIGTERM"
    assert of(events, AgentExited)[0].signal == 15


def test_kill_reaches_the_whole_process_group(tmp_path: Path) -> None:
    code = (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen(['sleep', '30'])\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(30)\n"
    )
    runner = CommandRunner()
    runner.start(spec(tmp_path, PY, ["-c", code]))
    deltas = drive(runner, lambda evs: any(isinstance(e, AnswerDelta) for e in evs))
    child = int("".join(e.text for e in of(deltas, AnswerDelta)).split()[0])
    runner.send(Kill())
    assert of(drive(runner, exited), AgentExited)[0].signal == 9
    deadline = time.monotonic() + 5
    while Path(f"/proc/{child}").exists() and "Z" not in _state(child):
        assert time.monotonic() < deadline, "the grandchild survived kill()"
        time.sleep(0.02)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return "Z"


def test_missing_command_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(AgentUnavailable) as err:
        CommandRunner().start(spec(tmp_path, "no-such-agent-cli-xyz"))
    assert (
        err.value.one_line() == "command 'no-such-agent-cli-xyz' is not installed or not executable"
    )
    with pytest.raises(AgentUnavailable):
        CommandRunner().start(spec(tmp_path, str(tmp_path)))  # a directory


def test_one_shot_refuses_follow_up_and_steer(tmp_path: Path) -> None:
    """The command runner never declares a follow-up or a steer, and sending one is a bug."""
    runner, _ = run_py(tmp_path, "print('x')")
    assert {"follow_up", "steer"}.isdisjoint(runner.accepts())
    assert runner.handle.session_ref is None
    with pytest.raises(Bug, match="does not accept"):
        runner.send(FollowUp("more"))


def test_kill_after_exit_reaches_children_left_behind(tmp_path: Path) -> None:
    # The supervisor kills the runner once the job is over, after the command has exited;
    # that kill used to be a no-op, so a background child outlived the job.
    code = (
        "import subprocess\n"
        "p = subprocess.Popen(['sleep', '30'], stdout=subprocess.DEVNULL)\n"
        "print(p.pid, flush=True)\n"
    )
    runner, events = run_py(tmp_path, code)
    child = int(of(events, RunFinished)[0].text.split()[0])
    assert runner.handle.pid is None and _state(child) != "Z"
    runner.send(Kill())
    deadline = time.monotonic() + 5
    while Path(f"/proc/{child}").exists() and "Z" not in _state(child):
        assert time.monotonic() < deadline, "the child left behind survived kill()"
        time.sleep(0.02)


def test_stderr_is_logged_in_full(tmp_path: Path) -> None:
    code = "import sys; sys.stderr.write('e' * (1024 * 1024 + 10) + '\\nlast\\n')"
    _, events = run_py(tmp_path, code)
    assert of(events, RunFinished)[0].text == ""
    assert (tmp_path / "stderr.log").stat().st_size == 1024 * 1024 + 16
