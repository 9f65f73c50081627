"""The tests of tests/unit/test_claude_events.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from specialists.runners.base import (
    Abort,
    AgentExited,
    Close,
    FollowUp,
    Kill,
    RunFinished,
    Terminate,
)
from specialists.runners.claude import (
    SYSTEM_PROMPT_ARG_MAX,
    SYSTEM_PROMPT_FILE,
    ClaudeRunner,
)
from tests.support.driving import drive, exited, finished, of
from tests.unit.test_claude_events import (
    _alive,
    activities,
    calls,
    fake,  # noqa: F401 - fixtures
    fake_spec,
    spec,
)


def test_run_then_follow_up_resumes_the_same_session(tmp_path: Path, fake: Path) -> None:
    runner = ClaudeRunner()
    runner.start(fake_spec(tmp_path, fake, "tool"))
    session = runner.session_ref
    assert session and len(session) == 36  # we chose it: known before the agent starts
    events = drive(runner, finished)
    assert of(events, RunFinished)[0].text == "Hello from the mock. Done."
    assert of(events, RunFinished)[0].session_file == session
    assert activities(events, "toolcall")[0].fields["tool"] == "Bash"
    # the process ends after its answer, but the runner stays open for a follow-up
    assert not exited(drive(runner, lambda _: runner.handle.pid is None))
    runner.send(FollowUp("and now?"))
    events = drive(runner, finished)
    assert of(events, RunFinished)[0].error is None
    first, second = calls(tmp_path)
    assert first["stdin"] == "do the thing" and second["stdin"] == "and now?"
    assert first["argv"][first["argv"].index("--session-id") + 1] == session
    assert second["argv"][second["argv"].index("--resume") + 1] == session
    assert runner.session_ref == session
    runner.send(Close())
    (ex,) = of(drive(runner, exited), AgentExited)
    assert ex.exit_code == 0


def test_crash_before_answer_ends_the_runner(tmp_path: Path, fake: Path) -> None:
    runner = ClaudeRunner()
    runner.start(fake_spec(tmp_path, fake, "crash"))
    events = drive(runner, exited)
    (fin,) = of(events, RunFinished)
    assert fin.error == "claude exited with code 3: fake claude: boom"
    assert of(events, AgentExited)[0].exit_code == 3
    assert "fake claude: boom" in (tmp_path / "stderr.log").read_text()


def test_error_result_then_close(tmp_path: Path, fake: Path) -> None:
    runner = ClaudeRunner()
    runner.start(fake_spec(tmp_path, fake, "max_turns"))
    events = drive(runner, finished)
    assert of(events, RunFinished)[0].error == (
        "max turns reached: Reached maximum number of turns (1)"
    )
    runner.send(Close())
    assert of(drive(runner, exited), AgentExited)[0].exit_code == 1


def test_abort_interrupts_and_keeps_the_session(tmp_path: Path, fake: Path) -> None:
    runner = ClaudeRunner()
    runner.start(fake_spec(tmp_path, fake, "hang"))
    drive(runner, lambda _: (tmp_path / "calls.jsonl").exists())
    runner.send(Abort())
    events = drive(runner, finished)
    assert of(events, RunFinished)[0].error == "aborted"
    assert not exited(events + runner.poll(0.2))
    runner.send(Terminate())
    assert of(drive(runner, exited), AgentExited)[0].exit_code == 130


def test_terminate_mid_run(tmp_path: Path, fake: Path) -> None:
    runner = ClaudeRunner()
    runner.start(fake_spec(tmp_path, fake, "hang"))
    drive(runner, lambda _: (tmp_path / "calls.jsonl").exists())
    runner.send(Terminate())
    events = drive(runner, exited)
    assert of(events, RunFinished)[0].error.startswith("claude killed by SIGTERM")
    assert of(events, AgentExited)[0].signal == 15


def test_large_prompt_and_system_prompt(tmp_path: Path, fake: Path) -> None:
    big = "x" * (2 * 1024 * 1024)  # far beyond a pipe buffer and an argv string
    system = "s" * (SYSTEM_PROMPT_ARG_MAX + 1)
    runner = ClaudeRunner()
    runner.start(fake_spec(tmp_path, fake, prompt=big, system_prompt=system))
    drive(runner, finished)
    (call,) = calls(tmp_path)
    assert call["stdin"] == big
    path = call["argv"][call["argv"].index("--append-system-prompt-file") + 1]
    assert Path(path) == tmp_path / SYSTEM_PROMPT_FILE
    assert Path(path).read_text() == system
    runner.send(Kill())


def test_binary_from_environment(
    tmp_path: Path, fake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPECIALISTS_CLAUDE_BIN", str(fake))
    runner = ClaudeRunner()
    runner.start(spec(tmp_path, env={"FAKE_CLAUDE_LOG": str(tmp_path / "calls.jsonl")}))
    assert of(drive(runner, finished), RunFinished)[0].text == "Hello from the mock. Done."
    runner.send(Kill())


def test_kill_after_the_runs_reaches_children_they_left_behind(tmp_path: Path) -> None:
    # claude exits after each answer; the supervisor's final kill() used to find no process
    # and so left a background child of that run alive after the job.
    import sys

    agent = tmp_path / "leaves-a-child"
    agent.write_text(
        f"#!{sys.executable}\n"
        "import json, subprocess, sys\n"
        "sys.stdin.read()\n"
        "p = subprocess.Popen(['sleep', '30'], stdout=subprocess.DEVNULL)\n"
        "result = {'type': 'result', 'subtype': 'success', 'result': str(p.pid)}\n"
        "print(json.dumps(result), flush=True)\n"
    )
    agent.chmod(0o755)
    runner = ClaudeRunner()
    runner.start(spec(tmp_path, options={"bin": str(agent)}))
    child = int(of(drive(runner, finished), RunFinished)[0].text)
    drive(runner, lambda _: runner.handle.pid is None)
    runner.send(Kill())
    assert of(drive(runner, exited), AgentExited)[0].exit_code == 0
    deadline = time.monotonic() + 5
    while _alive(child):
        assert time.monotonic() < deadline, "the child left behind survived kill()"
        time.sleep(0.02)


def test_close_while_the_prompt_is_still_being_fed(tmp_path: Path) -> None:
    # close() closes stdin when the prompt is not all written; the next poll used to crash
    # the supervisor with "ValueError: I/O operation on closed file".
    agent = tmp_path / "never-reads"
    agent.write_text("#!/bin/sh\nexec sleep 30\n")
    agent.chmod(0o755)
    runner = ClaudeRunner()
    runner.start(spec(tmp_path, options={"bin": str(agent)}, prompt="x" * (4 * 1024 * 1024)))
    try:
        assert runner.poll(0.05) == []
        runner.send(Close())
        assert runner.poll(0.05) == []
    finally:
        runner.send(Kill())
    events = drive(runner, exited)
    assert of(events, AgentExited)[0].signal == 9
