"""The Codex runner against the real `codex` CLI (0.17x) and the mock LLM (Responses API).

Codex is large and optional: without it these tests skip (the missing-binary test runs
anyway). Point SPECIALISTS_TEST_BIN_DIR at a directory holding `codex` to run them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specialists.base.errors import AgentUnavailable
from specialists.runners.base import (
    Abort,
    AgentExited,
    AnswerDelta,
    Close,
    FollowUp,
    Kill,
    LaunchSpec,
    RunFinished,
    Usage,
)
from specialists.runners.codex import CodexRunner
from tests.support.agent_env import MOCK_MODEL, AgentEnv, find_agent_bin
from tests.support.driving import acts, drive, exited, finished, of
from tests.support.mock_llm import MockLLM, Reply, ToolCall

pytestmark = pytest.mark.integration


@pytest.fixture
def codex() -> Path:
    path = find_agent_bin("codex")
    if path is None:
        pytest.skip("codex not installed (npm i -g @openai/codex)")
    return path


def make_spec(
    env: AgentEnv, job_dir: Path, codex: Path, prompt: str = "say hello", **kw: Any
) -> LaunchSpec:
    base: dict[str, Any] = {
        "job_id": "j1",
        "job_dir": job_dir,
        "cwd": env.project,
        "prompt": prompt,
        "system_prompt": "You are the codex-runner test specialist.",
        "model": MOCK_MODEL,
        "options": {"bin": str(codex)},
    }
    base.update(kw)
    return LaunchSpec(**base)


@pytest.fixture
def runner() -> Any:
    r = CodexRunner()
    yield r
    r.send(Kill())


def test_text_answer(
    mock_llm: MockLLM, isolated_env: AgentEnv, codex: Path, tmp_path: Path, runner: Any
) -> None:
    mock_llm.enqueue(Reply("The answer is 42."))
    runner.start(make_spec(isolated_env, tmp_path, codex))
    events = drive(runner, finished)
    (fin,) = of(events, RunFinished)
    assert fin.error is None and fin.text == "The answer is 42."
    assert fin.session_file == runner.session_ref and runner.session_ref
    assert [e.text for e in of(events, AnswerDelta)] == ["The answer is 42."]
    assert of(events, Usage)[0].output_tokens > 0
    req = mock_llm.model_requests[-1]
    messages = req.messages()
    developer = json.dumps([m for m in messages if m.get("role") == "developer"])
    assert "You are the codex-runner test specialist." in developer
    assert req.last_user_text() == "say hello"
    runner.send(Close())
    assert of(drive(runner, exited), AgentExited)[0].exit_code == 0


def test_command_round_trip(
    mock_llm: MockLLM, isolated_env: AgentEnv, codex: Path, tmp_path: Path, runner: Any
) -> None:
    mock_llm.enqueue(
        Reply(tool_calls=[ToolCall("exec_command", {"cmd": "echo hi-from-codex"})]),
        Reply("DONE"),
    )
    runner.start(make_spec(isolated_env, tmp_path, codex, permission="MEDIUM"))
    events = drive(runner, finished)
    assert acts(events, "toolcall")[0].fields == {"tool": "bash", "args": "echo hi-from-codex"}
    assert acts(events, "tool_execution_end")[0].fields["exit_code"] == 0
    assert of(events, RunFinished)[0].text == "DONE"
    assert "hi-from-codex" in mock_llm.model_requests[-1].tool_results()[0]


def test_read_only_sandbox_blocks_writes(
    mock_llm: MockLLM, isolated_env: AgentEnv, codex: Path, tmp_path: Path
) -> None:
    results = {}
    for tier in ("READ_ONLY", "MEDIUM"):
        target = isolated_env.project / f"{tier}.txt"
        mock_llm.enqueue(
            Reply(tool_calls=[ToolCall("exec_command", {"cmd": f"echo x > {target}"})]),
            Reply("DONE"),
        )
        r = CodexRunner()
        r.start(make_spec(isolated_env, tmp_path, codex, permission=tier))
        drive(r, finished)
        r.send(Kill())
        results[tier] = target.exists()
    assert results == {"READ_ONLY": False, "MEDIUM": True}


def test_follow_up_resumes_the_thread(
    mock_llm: MockLLM, isolated_env: AgentEnv, codex: Path, tmp_path: Path, runner: Any
) -> None:
    mock_llm.enqueue(Reply("FIRST-ANSWER"), Reply("SECOND-ANSWER"))
    runner.start(make_spec(isolated_env, tmp_path, codex, prompt="first question"))
    drive(runner, finished)
    thread = runner.session_ref
    runner.send(FollowUp("second question"))
    fin = of(drive(runner, finished), RunFinished)[0]
    assert fin.text == "SECOND-ANSWER" and fin.session_file == thread
    history = json.dumps(mock_llm.model_requests[-1].messages())
    assert "first question" in history and "FIRST-ANSWER" in history
    assert "second question" in history


def test_provider_error_fails_the_run(
    mock_llm: MockLLM, isolated_env: AgentEnv, codex: Path, tmp_path: Path, runner: Any
) -> None:
    mock_llm.set_default(Reply.bad_request("the mock refuses"))
    runner.start(make_spec(isolated_env, tmp_path, codex))
    events = drive(runner, finished)
    assert of(events, RunFinished)[0].error == "the mock refuses"
    assert acts(events, "notice")  # the non-fatal model-metadata error item
    runner.send(Close())
    assert of(drive(runner, exited), AgentExited)[0].exit_code == 1


def test_abort_mid_stream(
    mock_llm: MockLLM, isolated_env: AgentEnv, codex: Path, tmp_path: Path, runner: Any
) -> None:
    mock_llm.enqueue(Reply("never finished " * 50, hang_after=3))
    runner.start(make_spec(isolated_env, tmp_path, codex))
    mock_llm.wait_until_hanging(timeout=30)
    runner.send(Abort())
    events = drive(runner, lambda evs: finished(evs) or exited(evs))
    mock_llm.release()
    assert of(events, RunFinished)[0].error == "aborted"
    runner.send(Close())
    drive(runner, exited)


def test_missing_binary(isolated_env: AgentEnv, tmp_path: Path) -> None:
    spec = make_spec(isolated_env, tmp_path, tmp_path / "no-codex-here")
    with pytest.raises(AgentUnavailable, match="codex is not installed"):
        CodexRunner().start(spec)


def test_json_response_format_with_a_schema_is_a_strict_output_schema(
    mock_llm: MockLLM, isolated_env: AgentEnv, codex: Path, tmp_path: Path, runner: Any
) -> None:
    """`response_format: json` + runner.output_schema -> `exec --output-schema` (0.171.0 sends
    it as a strict json_schema text format); the answer is the model's JSON."""
    schema = {
        "type": "object",
        "properties": {"verdict": {"type": "string"}},
        "required": ["verdict"],
        "additionalProperties": False,
    }
    mock_llm.enqueue(Reply('{"verdict": "ship it"}'))
    options = {"bin": str(codex), "output_schema": schema}
    runner.start(make_spec(isolated_env, tmp_path, codex, response_format="json", options=options))
    (fin,) = of(drive(runner, finished), RunFinished)
    assert fin.error is None and json.loads(fin.text or "") == {"verdict": "ship it"}
    text_format = mock_llm.model_requests[0].json["text"]["format"]
    assert text_format["type"] == "json_schema" and text_format["schema"] == schema
