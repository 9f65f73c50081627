"""The Claude Code runner against the real `claude` CLI (2.1.332) and the mock LLM."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specialists.errors import AgentUnavailable
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
from specialists.runners.claude import ClaudeRunner
from tests.support.agent_env import CLAUDE_MOCK_MODEL, AgentEnv
from tests.support.driving import acts, drive, exited, finished, of
from tests.support.mock_llm import MockLLM, Reply, ToolCall

pytestmark = pytest.mark.integration


def make_spec(
    env: AgentEnv, job_dir: Path, claude_bin: Path, prompt: str = "say hello", **kw: Any
) -> LaunchSpec:
    base: dict[str, Any] = {
        "job_id": "j1",
        "job_dir": job_dir,
        "cwd": env.project,
        "prompt": prompt,
        "system_prompt": "You are the claude-runner test specialist.",
        "model": f"anthropic/{CLAUDE_MOCK_MODEL}",
        "options": {"bin": str(claude_bin)},
    }
    base.update(kw)
    return LaunchSpec(**base)


@pytest.fixture
def runner() -> Any:
    r = ClaudeRunner()
    yield r
    r.send(Kill())


def test_text_answer(
    mock_llm: MockLLM, isolated_env: AgentEnv, claude_bin: Path, tmp_path: Path, runner: Any
) -> None:
    mock_llm.enqueue(Reply("The answer is 42."))
    runner.start(make_spec(isolated_env, tmp_path, claude_bin))
    session = runner.session_ref
    events = drive(runner, finished)
    (fin,) = of(events, RunFinished)
    assert fin.error is None and fin.text == "The answer is 42."
    assert fin.session_file == session == runner.session_ref
    assert "".join(e.text for e in of(events, AnswerDelta)) == "The answer is 42."
    (usage,) = of(events, Usage)
    assert usage.input_tokens > 0 and usage.output_tokens > 0 and usage.cost_usd > 0
    (req,) = mock_llm.model_requests
    assert req.model == CLAUDE_MOCK_MODEL  # the provider prefix is stripped
    assert "You are the claude-runner test specialist." in req.system_text()
    assert "say hello" in json.dumps(req.messages())
    runner.send(Close())
    assert of(drive(runner, exited), AgentExited)[0].exit_code == 0


def test_bash_tool_round_trip(
    mock_llm: MockLLM, isolated_env: AgentEnv, claude_bin: Path, tmp_path: Path, runner: Any
) -> None:
    mock_llm.enqueue(
        Reply(tool_calls=[ToolCall("Bash", {"command": "echo hi-from-bash"})]), Reply("DONE")
    )
    runner.start(make_spec(isolated_env, tmp_path, claude_bin, permission="MEDIUM"))
    events = drive(runner, finished)
    assert acts(events, "toolcall")[0].fields == {"tool": "Bash", "args": "echo hi-from-bash"}
    (end,) = acts(events, "tool_execution_end")
    assert end.fields["tool"] == "Bash" and "is_error" not in end.fields
    assert of(events, RunFinished)[0].text == "DONE"
    assert mock_llm.model_requests[-1].tool_results() == ["hi-from-bash"]
    assert len(acts(events, "turn_end")) == 2


def test_read_only_offers_no_edit_tools_and_low_cannot_run_bash(
    mock_llm: MockLLM, isolated_env: AgentEnv, claude_bin: Path, tmp_path: Path
) -> None:
    seen: dict[str, set[str]] = {}
    for tier in ("READ_ONLY", "LOW"):
        mock_llm.enqueue(Reply("ok"))
        r = ClaudeRunner()
        r.start(make_spec(isolated_env, tmp_path, claude_bin, permission=tier))
        drive(r, finished)
        r.send(Kill())
        seen[tier] = set(mock_llm.model_requests[-1].tool_names())
    assert seen["READ_ONLY"] == {"Bash", "Glob", "Grep", "Read"}
    assert seen["LOW"] == {"Edit", "Glob", "Grep", "Read", "Write"}


def test_high_tier_runs_tools_even_as_root(
    mock_llm: MockLLM, isolated_env: AgentEnv, claude_bin: Path, tmp_path: Path, runner: Any
) -> None:
    target = isolated_env.project / "made.txt"
    mock_llm.enqueue(
        Reply(tool_calls=[ToolCall("Bash", {"command": f"echo made > {target}"})]),
        Reply("DONE"),
    )
    runner.start(make_spec(isolated_env, tmp_path, claude_bin, permission="HIGH"))
    fin = of(drive(runner, finished), RunFinished)[0]
    assert fin.error is None, fin.error
    assert target.read_text() == "made\n"


def test_follow_up_and_resume_see_the_first_exchange(
    mock_llm: MockLLM, isolated_env: AgentEnv, claude_bin: Path, tmp_path: Path, runner: Any
) -> None:
    mock_llm.enqueue(Reply("FIRST-ANSWER"), Reply("SECOND-ANSWER"), Reply("THIRD-ANSWER"))
    runner.start(make_spec(isolated_env, tmp_path, claude_bin, prompt="first question"))
    drive(runner, finished)
    session = runner.session_ref
    runner.send(FollowUp("second question"))
    assert of(drive(runner, finished), RunFinished)[0].text == "SECOND-ANSWER"
    history = json.dumps(mock_llm.model_requests[-1].messages())
    assert "first question" in history and "FIRST-ANSWER" in history
    assert "second question" in history
    assert runner.session_ref == session
    runner.send(Close())
    drive(runner, exited)
    # a new job continuing the session (LaunchSpec.resume_session)
    again = ClaudeRunner()
    again.start(
        make_spec(isolated_env, tmp_path, claude_bin, prompt="third", resume_session=session)
    )
    assert of(drive(again, finished), RunFinished)[0].text == "THIRD-ANSWER"
    again.send(Kill())
    history = json.dumps(mock_llm.model_requests[-1].messages())
    assert "SECOND-ANSWER" in history and "third" in history


def test_provider_error_ends_the_run_with_it(
    mock_llm: MockLLM, isolated_env: AgentEnv, claude_bin: Path, tmp_path: Path, runner: Any
) -> None:
    # 2.1.332 retries a 400 (six requests, the later ones with its deferred tools loaded),
    # then ends with is_error true, subtype "success", terminal_reason "api_error".
    mock_llm.set_default(Reply.bad_request("the mock refuses"))
    runner.start(make_spec(isolated_env, tmp_path, claude_bin))
    (fin,) = of(drive(runner, finished), RunFinished)
    assert fin.text is None
    assert fin.error is not None and "400" in fin.error and "the mock refuses" in fin.error
    runner.send(Close())
    assert of(drive(runner, exited), AgentExited)[0].exit_code == 1


def test_max_turns(
    mock_llm: MockLLM, isolated_env: AgentEnv, claude_bin: Path, tmp_path: Path, runner: Any
) -> None:
    mock_llm.set_default(Reply(tool_calls=[ToolCall("Bash", {"command": "echo again"})]))
    spec = make_spec(isolated_env, tmp_path, claude_bin, permission="MEDIUM", max_turns=1)
    runner.start(spec)
    (fin,) = of(drive(runner, finished), RunFinished)
    assert fin.error == "max turns reached: Reached maximum number of turns (1)"


def test_abort_mid_stream(
    mock_llm: MockLLM, isolated_env: AgentEnv, claude_bin: Path, tmp_path: Path, runner: Any
) -> None:
    mock_llm.enqueue(Reply("never finished " * 50, hang_after=3))
    runner.start(make_spec(isolated_env, tmp_path, claude_bin))
    mock_llm.wait_until_hanging(timeout=30)
    runner.send(Abort())
    events = drive(runner, lambda evs: finished(evs) or exited(evs))
    mock_llm.release()
    assert of(events, RunFinished)[0].error == "aborted"
    assert not exited(events)  # still resumable
    runner.send(Close())
    drive(runner, exited)


def test_missing_binary(isolated_env: AgentEnv, tmp_path: Path) -> None:
    spec = make_spec(isolated_env, tmp_path, tmp_path / "no-claude-here")
    with pytest.raises(AgentUnavailable, match="claude is not installed"):
        ClaudeRunner().start(spec)


def test_json_response_format_answers_through_structured_output(
    mock_llm: MockLLM, isolated_env: AgentEnv, claude_bin: Path, tmp_path: Path, runner: Any
) -> None:
    """`response_format: json` -> --json-schema; the READ_ONLY tool list still lets the model
    call StructuredOutput, and the answer is its JSON (2.1.197)."""
    schema = {"type": "object", "properties": {"verdict": {"type": "string"}}}
    mock_llm.enqueue(Reply(tool_calls=[ToolCall("StructuredOutput", {"verdict": "ship it"})]))
    options = {"bin": str(claude_bin), "output_schema": schema}
    spec = make_spec(
        isolated_env,
        tmp_path,
        claude_bin,
        permission="READ_ONLY",
        response_format="json",
        options=options,
    )
    runner.start(spec)
    (fin,) = of(drive(runner, finished), RunFinished)
    assert fin.error is None and json.loads(fin.text or "") == {"verdict": "ship it"}
    tools = {t["name"]: t for t in mock_llm.model_requests[0].json["tools"]}
    assert tools["StructuredOutput"]["input_schema"] == schema
