"""What every runner declares it accepts, state by state, against a real process or loop.

The supervisor refuses a request by asking `accepts()`, so the declarations must match what
each runner can really do: pi and native take everything while open; claude and codex (one
process per run) never a steer and a follow-up only once the run has answered; a plain
command only its one run. Close, Terminate and Kill are taken always, and a command that is
not declared is a bug, never a silent no-op.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from specialists.errors import Bug
from specialists.native.testing import ScriptedModel, reply
from specialists.runners.base import (
    ALWAYS_ACCEPTED,
    AgentRunner,
    Close,
    FollowUp,
    Kill,
    LaunchSpec,
    RunFinished,
    Steer,
)
from specialists.runners.claude import ClaudeRunner
from specialists.runners.codex import CodexRunner
from specialists.runners.command import CommandRunner
from specialists.runners.native import NativeRunner
from specialists.runners.pi import PiRunner
from tests.support import fake_claude, fake_codex
from tests.support.driving import drive, exited, finished
from tests.support.waiting import wait_until

FAKE_PI = [sys.executable, str(Path(__file__).resolve().parents[1] / "support" / "fake_pi.py")]


def spec(tmp_path: Path, **kw: Any) -> LaunchSpec:
    base: dict[str, Any] = {
        "job_id": "j1",
        "job_dir": tmp_path / "job",
        "cwd": tmp_path,
        "prompt": "do the thing",
        "system_prompt": "",
        "model": "mock/mock-model",
    }
    base.update(kw)
    (tmp_path / "job").mkdir(exist_ok=True)
    return LaunchSpec(**base)


def assert_refuses(runner: AgentRunner, *commands: Any) -> None:
    for command in commands:
        assert command.kind not in runner.accepts()
        with pytest.raises(Bug, match="does not accept"):
            runner.send(command)


def test_every_runner_takes_only_the_ladder_before_it_starts() -> None:
    for runner in (PiRunner(), NativeRunner(), ClaudeRunner(), CodexRunner(), CommandRunner()):
        assert runner.accepts() == ALWAYS_ACCEPTED, type(runner).__name__
        runner.send(Kill())  # harmless: nothing to kill yet


def test_pi_takes_everything_while_open(tmp_path: Path) -> None:
    runner = PiRunner()
    env = {"FAKE_PI_SCENARIO": "hang"}
    runner.start(spec(tmp_path, options={"pi_bin": FAKE_PI}, env=env))
    try:
        assert {"follow_up", "steer", "abort"} <= runner.accepts()  # running
        runner.send(Steer("look"))
        runner.send(FollowUp("and then"))
        runner.send(Close())
        assert runner.accepts() == ALWAYS_ACCEPTED  # closing: no more runs
        assert_refuses(runner, FollowUp("late"), Steer("late"))
    finally:
        runner.send(Kill())
        drive(runner, exited)


def test_pi_between_runs_takes_a_follow_up_or_steer_but_has_nothing_to_abort(
    tmp_path: Path,
) -> None:
    runner = PiRunner()
    runner.start(spec(tmp_path, options={"pi_bin": FAKE_PI}, env={"FAKE_PI_SCENARIO": "text"}))
    try:
        drive(runner, finished)
        wait_until(lambda: not runner.busy, what="pi to go idle")
        assert runner.accepts() == ALWAYS_ACCEPTED | {"follow_up", "steer"}
    finally:
        runner.send(Kill())
        drive(runner, exited)


@pytest.mark.parametrize(
    ("runner_class", "module", "scenario_var", "binary"),
    [
        (ClaudeRunner, fake_claude, "FAKE_CLAUDE_SCENARIO", "claude"),
        (CodexRunner, fake_codex, "FAKE_CODEX_SCENARIO", "codex"),
    ],
)
def test_one_process_per_run_agents_never_steer_and_follow_up_only_after_an_answer(
    tmp_path: Path, runner_class: type, module: Any, scenario_var: str, binary: str
) -> None:
    fake = module.install(tmp_path / "bin")
    hanging = runner_class()
    hanging.start(spec(tmp_path, options={"bin": str(fake)}, env={scenario_var: "hang"}))
    try:
        assert hanging.accepts() == ALWAYS_ACCEPTED | {"abort"}  # a run is going
        assert_refuses(hanging, Steer("x"), FollowUp("x"))
    finally:
        hanging.send(Kill())
    answering = runner_class()
    answering.start(spec(tmp_path, options={"bin": str(fake)}, env={scenario_var: "text"}))
    try:
        drive(answering, finished)
        assert answering.accepts() == ALWAYS_ACCEPTED | {"follow_up"}  # answered
        assert_refuses(answering, Steer("x"))
        answering.send(FollowUp("and now?"))  # resumed once the old process has gone
        assert drive(answering, finished)[-1] is not None
        answering.send(Close())
        drive(answering, exited)
        assert answering.accepts() == ALWAYS_ACCEPTED
    finally:
        answering.send(Kill())


def test_a_plain_command_takes_nothing_but_its_one_run(tmp_path: Path) -> None:
    runner = CommandRunner()
    code = "import sys, time; sys.stdin.read(); time.sleep(30)"
    runner.start(spec(tmp_path, options={"command": sys.executable, "args": ["-c", code]}))
    try:
        assert runner.accepts() == ALWAYS_ACCEPTED | {"abort"}
        assert_refuses(runner, FollowUp("more"), Steer("more"))
    finally:
        runner.send(Kill())
        drive(runner, exited)
    assert runner.accepts() == ALWAYS_ACCEPTED


def test_native_takes_everything_until_closed(tmp_path: Path) -> None:
    model = ScriptedModel([reply("one"), reply("two")])
    runner = NativeRunner(clients={"test/main": model}, breaker_dir=tmp_path / "breakers")
    runner.start(spec(tmp_path, model="test/main", job_dir=tmp_path / "job"))
    events = drive(runner, finished)
    assert [e.text for e in events if isinstance(e, RunFinished)] == ["one"]
    assert runner.accepts() == ALWAYS_ACCEPTED | {"follow_up", "steer", "abort"}
    runner.send(FollowUp("again"))
    drive(runner, finished)
    runner.send(Close())
    drive(runner, exited)
    assert runner.accepts() == ALWAYS_ACCEPTED
    assert_refuses(runner, FollowUp("late"))
