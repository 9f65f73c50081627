"""Claude Code: stream-json -> events (pure), argv from a spec (pure), and the runner's
process lifecycle over tests/support/fake_claude.py (a replay of recorded transcripts;
these few tests spawn that small Python process)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specialists.base.errors import AgentUnavailable
from specialists.runners.base import (
    Activity,
    AnswerDelta,
    LaunchSpec,
    RunFinished,
    RunnerEvent,
    Usage,
    summarize_args,
    toolcall,
)
from specialists.runners.claude import (
    ClaudeRunner,
    claude_argv,
    claude_model,
)
from specialists.runners.claude_events import ClaudeTranslator
from tests.support import fake_claude
from tests.support.driving import of

SESSION = "9cd1d296-6dea-45b5-b01c-30d6607e1dd5"


def translate(lines: list[str], step: float = 0.1) -> list[RunnerEvent]:
    t = ClaudeTranslator()
    out: list[RunnerEvent] = []
    for i, line in enumerate(lines):
        out += t.feed(json.loads(line), now=i * step)
    return out


def activities(events: list[RunnerEvent], name: str) -> list[Activity]:
    return [e for e in of(events, Activity) if e.event == name]


# --- translation ------------------------------------------------------------------------


def test_text_transcript() -> None:
    events = translate(fake_claude.TEXT_LINES)
    assert "".join(e.text for e in of(events, AnswerDelta)) == "Hello from the mock. Done."
    assert len(activities(events, "text")) == 1
    assert of(events, Usage) == [Usage(12, 7, 0, 0, 0.000141)]
    (fin,) = of(events, RunFinished)
    assert fin == RunFinished(text="Hello from the mock. Done.", session_file=SESSION)
    assert isinstance(events[-1], RunFinished)  # usage and turn_end come before it
    assert len(activities(events, "turn_end")) == 1


def test_tool_transcript_with_partial_messages() -> None:
    events = translate(fake_claude.TOOL_LINES)
    (call,) = activities(events, "toolcall")
    assert call.fields == {"tool": "Bash", "args": "echo hi-from-bash"}
    assert call.current_tool == "Bash(echo hi-from-bash)"
    (end,) = activities(events, "tool_execution_end")
    assert end.fields["tool"] == "Bash" and end.fields["duration_ms"] > 0
    assert "is_error" not in end.fields
    # streamed deltas and the full assistant message must not both become text
    assert "".join(e.text for e in of(events, AnswerDelta)) == "Hello from the mock. Done."
    assert len(activities(events, "turn_end")) == 2  # the result says num_turns: 2
    (fin,) = of(events, RunFinished)
    assert fin.text == "Hello from the mock. Done." and fin.error is None
    assert of(events, Usage)[0].cost_usd == pytest.approx(0.00047)


def test_assistant_message_split_over_lines_counts_once() -> None:
    def line(block: dict[str, Any]) -> dict[str, Any]:
        return {"type": "assistant", "message": {"id": "m1", "content": [block]}}

    t = ClaudeTranslator()
    events = t.feed(line({"type": "thinking", "thinking": "hmm"}), 0)
    events += t.feed(line({"type": "text", "text": "a"}), 0)
    events += t.feed(line({"type": "text", "text": "b"}), 0)
    assert [e.event for e in of(events, Activity)] == ["thinking", "text"]
    assert [e.text for e in of(events, AnswerDelta)] == ["a", "b"]


def test_tool_result_error_is_flagged() -> None:
    t = ClaudeTranslator()
    use = {"type": "tool_use", "id": "t1", "name": "Write", "input": {"file_path": "/x"}}
    t.feed({"type": "assistant", "message": {"id": "m1", "content": [use]}}, 1.0)
    result = {"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": "no"}
    (end,) = t.feed({"type": "user", "message": {"content": [result]}}, 1.5)
    assert isinstance(end, Activity)
    assert end.fields == {"tool": "Write", "duration_ms": 500, "is_error": True, "error": "no"}


def test_max_turns_result_is_an_error() -> None:
    line = {
        "type": "result",
        "subtype": "error_max_turns",
        "is_error": True,
        "session_id": "s1",
        "total_cost_usd": 0.0002,
        "usage": {"input_tokens": 12, "output_tokens": 6},
        "errors": ["Reached maximum number of turns (1)"],
    }
    events = ClaudeTranslator().feed(line, 0)
    assert of(events, Usage) == [Usage(12, 6, 0, 0, 0.0002)]
    (fin,) = of(events, RunFinished)
    assert fin.text is None
    assert fin.error == "max turns reached: Reached maximum number of turns (1)"


def test_api_error_comes_as_success_with_is_error() -> None:
    line = {
        "type": "result",
        "subtype": "success",
        "is_error": True,
        "api_error_status": 400,
        "result": "API Error: 400 bad thing happened",
    }
    (_, fin) = ClaudeTranslator().feed(line, 0)
    assert fin == RunFinished(text=None, error="API Error: 400 bad thing happened")


def test_api_retry_is_reported() -> None:
    line = {"type": "system", "subtype": "api_retry", "attempt": 2, "max_retries": 10}
    (ev,) = ClaudeTranslator().feed(line, 0)
    assert ev == Activity("retry", {"attempt": 2, "max_retries": 10})


def test_exit_without_result() -> None:
    t = ClaudeTranslator()
    t.feed(json.loads(fake_claude.TEXT_LINES[0]), 0)
    assert t.on_exit("claude exited with code 1: boom", aborted=False) == [
        RunFinished(text=None, error="claude exited with code 1: boom", session_file=SESSION)
    ]
    assert t.on_exit("again", aborted=False) == []
    aborted = ClaudeTranslator()
    assert aborted.on_exit("x", aborted=True)[0].error == "aborted"  # type: ignore[union-attr]
    done = ClaudeTranslator()
    for line in fake_claude.TEXT_LINES:
        done.feed(json.loads(line), 0)
    assert done.on_exit("claude exited with code 0", aborted=False) == []


def test_toolcall_shape_is_shared_by_every_runner() -> None:
    call = toolcall("bash", {"command": "echo   hi\nthere"})
    assert call.fields == {"tool": "bash", "args": "echo hi there"}
    assert call.current_tool == "bash(echo hi there)"
    assert toolcall("ls", {}).current_tool == "ls"


def test_summarize_args() -> None:
    assert summarize_args({"command": "ls\n  -la", "description": "x"}) == "ls -la"
    assert summarize_args({"file_path": "/a/b.py"}) == "/a/b.py"
    assert summarize_args({"n": 1}) == '{"n":1}'
    long = summarize_args({"command": "x" * 500})
    assert len(long) == 200 and long.endswith("…")


# --- argv -------------------------------------------------------------------------------


def spec(tmp_path: Path, **kw: Any) -> LaunchSpec:
    base: dict[str, Any] = {
        "job_id": "j1",
        "job_dir": tmp_path,
        "cwd": tmp_path,
        "prompt": "do the thing",
        "system_prompt": "You are a tester.",
        "model": "anthropic/claude-sonnet-4-5",
    }
    base.update(kw)
    return LaunchSpec(**base)


def test_argv_read_only(tmp_path: Path) -> None:
    argv = claude_argv(
        spec(tmp_path, permission="READ_ONLY", max_turns=3, thinking_level="minimal"),
        session_id="S",
        resume=False,
        as_root=False,
    )
    assert argv[:4] == ["-p", "--output-format", "stream-json", "--verbose"]
    assert argv[argv.index("--session-id") + 1] == "S"
    assert "--resume" not in argv
    assert "--tools=Read,Grep,Glob,Bash" in argv
    assert "--allowedTools=Read,Grep,Glob,Bash" in argv
    assert "--disallowedTools=Edit,Write,NotebookEdit" in argv
    assert argv[argv.index("--permission-mode") + 1] == "default"
    assert argv[argv.index("--append-system-prompt") + 1] == "You are a tester."
    assert argv[argv.index("--model") + 1] == "claude-sonnet-4-5"
    assert argv[argv.index("--max-turns") + 1] == "3"
    assert argv[argv.index("--effort") + 1] == "low"
    assert "do the thing" not in argv  # the prompt goes on stdin


def test_argv_resume_high_and_extra(tmp_path: Path) -> None:
    s = spec(tmp_path, permission="HIGH", system_prompt="", model=None, extra_args=("--x",))
    argv = claude_argv(s, session_id="S", resume=True, as_root=False)
    assert argv[argv.index("--resume") + 1] == "S" and "--session-id" not in argv
    assert argv[argv.index("--permission-mode") + 1] == "bypassPermissions"
    assert not [a for a in argv if a.startswith(("--tools", "--allowedTools"))]
    assert "--append-system-prompt" not in argv and "--model" not in argv
    assert argv[-1] == "--x"
    as_root = claude_argv(s, session_id="S", resume=True, as_root=True)
    assert as_root[as_root.index("--permission-mode") + 1] == "acceptEdits"


def test_model_prefix() -> None:
    assert claude_model("anthropic/claude-opus-4") == "claude-opus-4"
    assert claude_model("sonnet") == "sonnet"
    assert claude_model(None) is None and claude_model("") is None


# --- the runner over the fake executable -------------------------------------------------


@pytest.fixture
def fake(tmp_path: Path) -> Path:
    return fake_claude.install(tmp_path / "bin")


def fake_spec(tmp_path: Path, fake: Path, scenario: str = "text", **kw: Any) -> LaunchSpec:
    env = {"FAKE_CLAUDE_LOG": str(tmp_path / "calls.jsonl"), "FAKE_CLAUDE_SCENARIO": scenario}
    return spec(tmp_path, options={"bin": str(fake)}, env=env, **kw)


def calls(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (tmp_path / "calls.jsonl").read_text().splitlines()]


def test_missing_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("SPECIALISTS_CLAUDE_BIN", raising=False)
    with pytest.raises(AgentUnavailable) as err:
        ClaudeRunner().start(spec(tmp_path))
    assert err.value.one_line() == (
        "claude is not installed: npm install -g @anthropic-ai/claude-code"
    )
    with pytest.raises(AgentUnavailable, match="is not an executable file"):
        ClaudeRunner().start(spec(tmp_path, options={"bin": str(tmp_path / "nope")}))


def test_error_result_after_abort_reads_aborted() -> None:
    t = ClaudeTranslator()
    t.aborting = True
    line = {
        "type": "result",
        "subtype": "error_during_execution",
        "is_error": True,
        "errors": ["[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=null"],
    }
    assert of(t.feed(line, 0), RunFinished)[0].error == "aborted"


def _alive(pid: int) -> bool:
    try:
        return ") Z " not in Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False


# --- Claude Code 2.1.332, as recorded (tests/support/record_claude.py) ------------------

RECORDED_2_1_332 = Path(__file__).resolve().parents[1] / "fixtures" / "claude-code-2.1.332"


def recorded(name: str) -> list[str]:
    return [ln for ln in (RECORDED_2_1_332 / name).read_text().splitlines() if ln.strip()]


def test_the_2_1_332_text_tool_and_error_streams_translate() -> None:
    """The runner's parser on what Claude Code 2.1.332 printed (fake_claude replays the
    2.1.197 recordings, whose lines these have the same shape as)."""
    text = translate(recorded("stream-json-text.jsonl"))
    (fin,) = of(text, RunFinished)
    assert (fin.text, fin.error) == ("The answer is 42.", None)
    assert fin.session_file == json.loads(recorded("stream-json-text.jsonl")[0])["session_id"]
    assert [u.output_tokens for u in of(text, Usage)] == [4]  # the result line's total
    tool = translate(recorded("stream-json-tool.jsonl"))
    (call,) = activities(tool, "toolcall")
    assert call.fields == {"tool": "Bash", "args": "echo hi-from-bash"}
    (end,) = activities(tool, "tool_execution_end")
    assert end.fields["tool"] == "Bash" and "is_error" not in end.fields
    assert of(tool, RunFinished)[0].text == "DONE"
    error = translate(recorded("stream-json-api-error.jsonl"))
    (failed,) = of(error, RunFinished)
    assert failed.text is None and failed.error is not None
    assert "400" in failed.error and "the mock refuses" in failed.error


def test_a_hostile_result_usage_never_crashes_nor_corrupts_spend() -> None:
    from specialists.runners.claude_events import usage_from_result

    huge = json.loads('{"total_cost_usd":1' + "0" * 400 + "}")  # float() of it overflows
    assert usage_from_result(huge) == Usage()
    nan = json.loads('{"total_cost_usd":NaN,"usage":{"input_tokens":-100,"output_tokens":3}}')
    assert usage_from_result(nan) == Usage(output_tokens=3)  # NaN would disarm every ceiling
    assert usage_from_result({"total_cost_usd": -2.0}) == Usage()
    assert usage_from_result({"total_cost_usd": 0.5}) == Usage(cost_usd=0.5)


@pytest.mark.parametrize("hostile", ["--dangerously-skip-permissions", "-p", "a b", "", ["x"]])
def test_a_session_id_that_is_no_id_is_never_resumed(hostile: object) -> None:
    """A follow-up passes the session id back as `--resume <id>`; a flag in its place was
    read as a flag (Claude Code's --resume takes an optional value)."""
    t = ClaudeTranslator()
    t.feed({"type": "system", "subtype": "init", "session_id": SESSION}, now=0.0)
    t.feed({"type": "system", "subtype": "status", "session_id": hostile}, now=0.1)
    assert t.session_id == SESSION
    fresh = ClaudeTranslator()
    fresh.feed({"type": "system", "subtype": "init", "session_id": hostile}, now=0.0)
    assert fresh.session_id is None  # a follow-up then fails the job: no session to resume
