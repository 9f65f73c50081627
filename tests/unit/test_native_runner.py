"""NativeRunner: the Runner protocol over the loop thread (ScriptedModel, no network)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from specialists.config import Config
from specialists.native.model import ModelError
from specialists.native.testing import ScriptedModel
from specialists.runners.base import (
    Activity,
    AgentExited,
    Close,
    FollowUp,
    LaunchSpec,
    RunFinished,
    RunnerEvent,
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
