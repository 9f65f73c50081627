"""The tests of tests/unit/test_native_runner.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from specialists.config import Config
from specialists.native.testing import ScriptedModel, call, reply
from specialists.runners.base import (
    Abort,
    Activity,
    AgentExited,
    AnswerDelta,
    Close,
    FollowUp,
    Kill,
    RunFinished,
    RunnerEvent,
    Usage,
)
from specialists.runners.native import NativeRunner
from tests.unit.test_native_runner import collect, make_spec


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
