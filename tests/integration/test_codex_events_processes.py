"""The tests of tests/unit/test_codex_events.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

from specialists.runners.base import (
    Abort,
    AgentExited,
    Close,
    FollowUp,
    Kill,
    RunFinished,
)
from specialists.runners.codex import (
    CodexRunner,
)
from tests.support.driving import drive, exited, finished, of
from tests.unit.test_codex_events import (
    THREAD,
    activities,
    calls,
    fake,  # noqa: F401 - fixtures
    fake_spec,
)


def test_run_then_follow_up_resumes_the_thread(tmp_path: Path, fake: Path) -> None:
    runner = CodexRunner()
    runner.start(fake_spec(tmp_path, fake, "tool"))
    events = drive(runner, finished)
    assert of(events, RunFinished)[0].text == "Hello from the mock. Done."
    assert runner.session_ref == THREAD
    assert activities(events, "tool_execution_end")[0].fields["exit_code"] == 0
    drive(runner, lambda _: runner.handle.pid is None)
    runner.send(FollowUp("and now?"))
    events = drive(runner, finished)
    assert of(events, RunFinished)[0].session_file == THREAD
    first, second = calls(tmp_path)
    assert first["stdin"] == "do the thing" and second["stdin"] == "and now?"
    assert second["argv"][:2] == ["exec", "resume"] and second["argv"][-2] == THREAD
    runner.send(Close())
    assert of(drive(runner, exited), AgentExited)[0].exit_code == 0


def test_reconnect_then_success(tmp_path: Path, fake: Path) -> None:
    runner = CodexRunner()
    runner.start(fake_spec(tmp_path, fake, "reconnect"))
    events = drive(runner, finished)
    assert len(activities(events, "retry")) == 1
    assert of(events, RunFinished)[0].error is None


def test_turn_failed(tmp_path: Path, fake: Path) -> None:
    runner = CodexRunner()
    runner.start(fake_spec(tmp_path, fake, "turn_failed"))
    events = drive(runner, finished)
    assert of(events, RunFinished)[0].error == "bad thing happened"
    runner.send(Close())
    assert of(drive(runner, exited), AgentExited)[0].exit_code == 1


def test_crash(tmp_path: Path, fake: Path) -> None:
    runner = CodexRunner()
    runner.start(fake_spec(tmp_path, fake, "crash"))
    events = drive(runner, exited)
    assert of(events, RunFinished)[0].error == "codex exited with code 3: fake codex: boom"


def test_abort_then_follow_up_resumes(tmp_path: Path, fake: Path) -> None:
    runner = CodexRunner()
    runner.start(fake_spec(tmp_path, fake, "hang"))
    drive(runner, lambda _: (tmp_path / "calls.jsonl").exists())
    runner.send(Abort())
    events = drive(runner, finished)
    assert of(events, RunFinished)[0].error == "aborted"
    assert not exited(events)
    runner.send(FollowUp("continue"))  # the aborted session can still be resumed
    drive(runner, lambda _: len(calls(tmp_path)) == 2)
    assert calls(tmp_path)[1]["argv"][-2:] == [THREAD, "-"]
    runner.send(Kill())
    events = drive(runner, exited)
    assert of(events, AgentExited)[0].signal == 9
