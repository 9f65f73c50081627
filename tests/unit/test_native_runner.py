"""NativeRunner: the Runner protocol over the loop thread (ScriptedModel, no network)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from specialists.catalog.config import Config
from specialists.native.model import ModelError
from specialists.native.testing import ScriptedModel, call, reply
from specialists.runners.base import (
    Abort,
    Activity,
    AgentExited,
    AnswerDelta,
    Close,
    FollowUp,
    Kill,
    LaunchSpec,
    RunFinished,
    RunnerEvent,
    Usage,
)
from specialists.runners.native import NativeRunner


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME"):
        monkeypatch.setenv(var, str(tmp_path / "home" / var.lower()))
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def make_spec(tmp_path: Path, **kw: object) -> LaunchSpec:
    cwd = tmp_path / "work"
    cwd.mkdir(exist_ok=True)
    base: dict[str, object] = {
        "job_id": "j1",
        "job_dir": tmp_path / ".specialists" / "jobs" / "j1",
        "cwd": cwd,
        "prompt": "hello",
        "system_prompt": "sys",
        "model": "test/main",
    }
    base.update(kw)
    return LaunchSpec(**base)  # type: ignore[arg-type]


def collect(runner: NativeRunner, until: type, timeout: float = 60) -> list[RunnerEvent]:
    events: list[RunnerEvent] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events += runner.poll(0.2)
        if any(isinstance(e, until) for e in events):
            return events
    raise AssertionError(f"no {until.__name__} within {timeout}s: {events}")


def test_prompt_to_run_finished_then_close(tmp_path: Path) -> None:
    model = ScriptedModel([reply(calls=[call("bash", command="echo hi")]), reply("All done.")])
    runner = NativeRunner(config=Config(), clients={"test/main": model})
    spec = make_spec(tmp_path)
    runner.start(spec)
    assert runner.handle.pid is None and "steer" in runner.accepts()
    events = collect(runner, RunFinished)
    finished = next(e for e in events if isinstance(e, RunFinished))
    assert finished.text == "All done." and finished.error is None
    assert finished.session_file == str(spec.job_dir / "session.jsonl")
    kinds = [e.event for e in events if isinstance(e, Activity)]
    assert [
        k for k in kinds if k in ("toolcall", "tool_execution", "tool_execution_end", "turn_end")
    ][:4] == ["toolcall", "tool_execution", "tool_execution_end", "turn_end"]
    assert "".join(e.text for e in events if isinstance(e, AnswerDelta)) == "All done."
    assert sum(e.input_tokens for e in events if isinstance(e, Usage)) == 20
    runner.send(Close())
    assert isinstance(collect(runner, AgentExited)[-1], AgentExited)
    assert runner.join(60)
    lines = (spec.job_dir / "session.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["job_id"] == "j1"


def test_follow_up_runs_after_first_answer(tmp_path: Path) -> None:
    model = ScriptedModel(["first", "second"])
    runner = NativeRunner(config=Config(), clients={"test/main": model})
    runner.start(make_spec(tmp_path))
    collect(runner, RunFinished)
    runner.send(FollowUp("and another thing"))
    events = collect(runner, RunFinished)
    assert [e.text for e in events if isinstance(e, RunFinished)] == ["second"]
    assert model.requests[1].items[-1].kind == "user"
    runner.send(Close())
    collect(runner, AgentExited)


def test_missing_api_key_is_one_clear_line(tmp_path: Path) -> None:
    runner = NativeRunner(config=Config())
    runner.start(make_spec(tmp_path, model="openai/gpt-4.1"))
    events = collect(runner, AgentExited, timeout=60)
    finished = next(e for e in events if isinstance(e, RunFinished))
    assert finished.error == (
        "OPENAI_API_KEY is not set: export it or configure a provider in config.toml"
    )
    assert events[-1] == AgentExited(1)


@pytest.mark.parametrize(
    ("model", "needle"),
    [("nosuch/x", "unknown provider 'nosuch'"), ("gpt-4", "must be written provider/model")],
)
def test_bad_model_names_end_the_job(tmp_path: Path, model: str, needle: str) -> None:
    runner = NativeRunner(config=Config())
    runner.start(make_spec(tmp_path, model=model))
    events = collect(runner, AgentExited, timeout=60)
    finished = next(e for e in events if isinstance(e, RunFinished))
    assert finished.error and needle in finished.error


def test_no_model_anywhere(tmp_path: Path) -> None:
    runner = NativeRunner(config=Config())
    runner.start(make_spec(tmp_path, model=None))
    finished = next(e for e in collect(runner, AgentExited) if isinstance(e, RunFinished))
    assert finished.error and "no model for the native runner" in finished.error


def test_fallback_model_used_after_retries(tmp_path: Path) -> None:
    primary = ScriptedModel([ModelError("503", category="transient")] * 2)
    backup = ScriptedModel(["from backup"])
    runner = NativeRunner(config=Config(), clients={"test/main": primary, "test/backup": backup})
    spec = make_spec(
        tmp_path,
        fallback_model="test/backup",
        options={"max_retries": 1, "retry_base_delay_s": 0},
    )
    runner.start(spec)
    events = collect(runner, RunFinished)
    assert next(e for e in events if isinstance(e, RunFinished)).text == "from backup"
    assert any(isinstance(e, Activity) and e.event == "retry" for e in events)
    runner.send(Close())


def test_resume_session_copies_and_continues(tmp_path: Path) -> None:
    first_model = ScriptedModel(["remembered: blue"])
    first = NativeRunner(config=Config(), clients={"test/main": first_model})
    spec1 = make_spec(tmp_path, prompt="my colour is blue")
    first.start(spec1)
    collect(first, RunFinished)
    first.send(Close())
    collect(first, AgentExited)

    second_model = ScriptedModel(["blue"])
    second = NativeRunner(config=Config(), clients={"test/main": second_model})
    spec2 = make_spec(
        tmp_path,
        job_id="j2",
        job_dir=tmp_path / ".specialists" / "jobs" / "j2",
        prompt="what colour?",
        resume_session=str(spec1.job_dir / "session.jsonl"),
    )
    second.start(spec2)
    collect(second, RunFinished)
    second.send(Close())
    texts = [getattr(i, "text", "") for i in second_model.requests[0].items]
    assert texts == ["my colour is blue", "remembered: blue", "what colour?"]
    assert len((spec1.job_dir / "session.jsonl").read_text().splitlines()) == 3, "source untouched"


def test_abort_ends_run_and_runner_stays_usable(tmp_path: Path) -> None:
    model = ScriptedModel([reply(calls=[call("bash", command="sleep 30")]), "after abort"])
    # The bash guard would refuse `sleep 30` (R-B1); this test needs a command that blocks.
    runner = NativeRunner(
        config=Config(raw={"bash": {"guard": "off"}}), clients={"test/main": model}
    )
    runner.start(make_spec(tmp_path))
    events: list[RunnerEvent] = []
    deadline = time.monotonic() + 10
    while not any(isinstance(e, Activity) and e.event == "tool_execution" for e in events):
        assert time.monotonic() < deadline
        events += runner.poll(0.1)
    started = time.monotonic()
    runner.send(Abort())
    finished = next(e for e in collect(runner, RunFinished) if isinstance(e, RunFinished))
    assert finished.error == "aborted"
    assert time.monotonic() - started < 3
    runner.send(FollowUp("go on"))
    again = next(e for e in collect(runner, RunFinished) if isinstance(e, RunFinished))
    assert again.text == "after abort"
    runner.send(Kill())
    collect(runner, AgentExited)


def test_replay_runs_without_any_key(tmp_path: Path) -> None:
    rec = tmp_path / "work" / "demo.jsonl"
    rec.parent.mkdir(parents=True, exist_ok=True)
    rec.write_text(
        json.dumps({"tool_calls": [{"name": "bash", "arguments": {"command": "echo replayed"}}]})
        + "\n"
        + json.dumps({"text": "The command printed replayed."})
        + "\n"
    )
    runner = NativeRunner(config=Config())
    spec = make_spec(tmp_path, model="replay/demo.jsonl")
    runner.start(spec)
    finished = next(e for e in collect(runner, RunFinished) if isinstance(e, RunFinished))
    assert finished.text == "The command printed replayed." and finished.error is None
    session = (spec.job_dir / "session.jsonl").read_text()
    assert "replayed\\n" in session, "the tool really ran"
    runner.send(Close())
