"""Codex: `exec --json` lines -> events (pure), argv from a spec (pure), and the runner's
process lifecycle over tests/support/fake_codex.py (a replay of recorded transcripts; these
few tests spawn that small Python process)."""

from __future__ import annotations

import json
import tomllib
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
)
from specialists.runners.codex import (
    INSTRUCTIONS_ARG_MAX,
    CodexRunner,
    codex_argv,
    codex_model,
    first_message,
    toml_string,
)
from specialists.runners.codex_events import CodexTranslator, command_summary, error_message
from tests.support import fake_codex
from tests.support.driving import of

THREAD = "01a2289d-d946-7492-8f0f-1fa58ff0e1a0"


def translate(lines: list[str]) -> tuple[CodexTranslator, list[RunnerEvent]]:
    t = CodexTranslator()
    out: list[RunnerEvent] = []
    for i, line in enumerate(lines):
        out += t.feed(json.loads(line), now=i * 0.1)
    return t, out


def activities(events: list[RunnerEvent], name: str) -> list[Activity]:
    return [e for e in of(events, Activity) if e.event == name]


# --- translation ------------------------------------------------------------------------


def test_text_transcript() -> None:
    t, events = translate(fake_codex.TEXT_LINES)
    assert t.thread_id == THREAD
    # the model-metadata `error` item is a notice, not a failure
    (notice,) = activities(events, "notice")
    assert "Model metadata" in notice.fields["message"]
    assert [e.text for e in of(events, AnswerDelta)] == ["Hello from the mock. Done."]
    assert of(events, Usage) == [Usage(input_tokens=12, output_tokens=7)]
    (fin,) = of(events, RunFinished)
    assert fin == RunFinished(text="Hello from the mock. Done.", session_file=THREAD)
    assert isinstance(events[-1], RunFinished)


def test_tool_transcript() -> None:
    _, events = translate(fake_codex.TOOL_LINES)
    (call,) = activities(events, "toolcall")
    assert call.fields == {"tool": "bash", "args": "echo hi-from-codex"}
    assert call.current_tool == "bash(echo hi-from-codex)"
    (end,) = activities(events, "tool_execution_end")
    assert end.fields == {"tool": "bash", "duration_ms": 100, "exit_code": 0}
    assert of(events, RunFinished)[0].text == "Hello from the mock. Done."


def test_cached_tokens_are_not_counted_twice() -> None:
    usage = {"input_tokens": 100, "cached_input_tokens": 60, "output_tokens": 5}
    events = CodexTranslator().feed({"type": "turn.completed", "usage": usage}, 0)
    assert of(events, Usage) == [Usage(input_tokens=40, output_tokens=5, cache_read_tokens=60)]


def test_reconnect_errors_are_not_fatal_but_turn_failed_is() -> None:
    t = CodexTranslator()
    retry = t.feed({"type": "error", "message": "Reconnecting... 1/5 (busy)"}, 0)
    assert retry == [Activity("retry", {"message": "Reconnecting... 1/5 (busy)"})]
    assert not t.finished
    body = json.dumps({"error": {"message": "bad thing happened", "type": "invalid_request"}})
    events = t.feed({"type": "turn.failed", "error": {"message": body}}, 0)
    (fin,) = of(events, RunFinished)
    assert fin.error == "bad thing happened" and fin.text is None


def test_exit_without_turn_end_uses_the_last_error() -> None:
    t = CodexTranslator()
    t.feed({"type": "error", "message": "stream disconnected"}, 0)
    (fin,) = t.on_exit("codex exited with code 1", aborted=False)
    assert isinstance(fin, RunFinished)
    assert fin.error == "codex exited with code 1: stream disconnected"
    assert t.on_exit("again", aborted=False) == []
    (aborted,) = CodexTranslator().on_exit("x", aborted=True)
    assert isinstance(aborted, RunFinished) and aborted.error == "aborted"


def test_summaries() -> None:
    assert command_summary("/bin/bash -lc 'echo hi && ls'") == "echo hi && ls"
    assert command_summary("git status") == "git status"
    assert command_summary("bash -lc 'unbalanced") == "bash -lc 'unbalanced"
    assert error_message("plain text") == "plain text"
    assert error_message({"message": '{"error": {"message": "inner"}}'}) == "inner"


# --- argv -------------------------------------------------------------------------------


def spec(tmp_path: Path, **kw: Any) -> LaunchSpec:
    base: dict[str, Any] = {
        "job_id": "j1",
        "job_dir": tmp_path,
        "cwd": tmp_path,
        "prompt": "do the thing",
        "system_prompt": 'Be "careful".\nAlways.',
        "model": "openai/gpt-5-codex",
    }
    base.update(kw)
    return LaunchSpec(**base)


def config_overrides(argv: list[str]) -> dict[str, Any]:
    """Parse every `-c key=value` the way codex does (TOML values)."""
    doc = "\n".join(argv[i + 1] for i, a in enumerate(argv) if a == "-c")
    return tomllib.loads(doc)


def test_argv_new_run(tmp_path: Path) -> None:
    argv = codex_argv(spec(tmp_path, permission="READ_ONLY", thinking_level="high"), resume=None)
    assert argv[:3] == ["exec", "--json", "--skip-git-repo-check"]
    assert argv[argv.index("-C") + 1] == str(tmp_path)
    assert argv[argv.index("-m") + 1] == "gpt-5-codex"
    assert argv[-1] == "-"  # the prompt comes on stdin
    assert config_overrides(argv) == {
        "sandbox_mode": "read-only",
        "approval_policy": "never",
        "developer_instructions": 'Be "careful".\nAlways.',
        "model_reasoning_effort": "high",
    }


def test_argv_resume(tmp_path: Path) -> None:
    argv = codex_argv(spec(tmp_path, permission="HIGH", model=None), resume="T1")
    assert argv[:2] == ["exec", "resume"]
    assert argv[-2:] == ["T1", "-"]
    assert "-C" not in argv and "-m" not in argv
    assert config_overrides(argv)["sandbox_mode"] == "danger-full-access"


def test_toml_string_round_trips() -> None:
    for text in ['a"b\\c', "line\nnext\ttab", "del\x7fbell\x07", "émoji 🎉", ""]:
        assert tomllib.loads(f"v = {toml_string(text)}")["v"] == text


def test_huge_system_prompt_goes_in_front_of_the_prompt(tmp_path: Path) -> None:
    s = spec(tmp_path, system_prompt="r" * (INSTRUCTIONS_ARG_MAX + 1))
    assert "developer_instructions" not in config_overrides(codex_argv(s, resume=None))
    message = first_message(s)
    assert message.startswith("<instructions>\nrrr") and message.endswith("do the thing")
    assert first_message(spec(tmp_path)) == "do the thing"


def test_model_prefix() -> None:
    assert codex_model("openai/gpt-5") == "gpt-5"
    assert codex_model("o3") == "o3"
    assert codex_model(None) is None


# --- the runner over the fake executable -------------------------------------------------


@pytest.fixture
def fake(tmp_path: Path) -> Path:
    return fake_codex.install(tmp_path / "bin")


def fake_spec(tmp_path: Path, fake: Path, scenario: str = "text", **kw: Any) -> LaunchSpec:
    env = {"FAKE_CODEX_LOG": str(tmp_path / "calls.jsonl"), "FAKE_CODEX_SCENARIO": scenario}
    return spec(tmp_path, options={"bin": str(fake)}, env=env, **kw)


def calls(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (tmp_path / "calls.jsonl").read_text().splitlines()]


def test_missing_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("SPECIALISTS_CODEX_BIN", raising=False)
    with pytest.raises(AgentUnavailable) as err:
        CodexRunner().start(spec(tmp_path))
    assert err.value.one_line() == "codex is not installed: npm install -g @openai/codex"


def test_turn_failed_after_abort_reads_aborted() -> None:
    t = CodexTranslator()
    t.aborting = True
    events = t.feed({"type": "turn.failed", "error": {"message": "interrupted"}}, 0)
    assert of(events, RunFinished)[0].error == "aborted"


@pytest.mark.parametrize("hostile", ["--dangerously-bypass-approvals-and-sandbox", "-", "x\ny"])
def test_a_thread_id_that_is_no_id_is_never_resumed(hostile: str) -> None:
    """`codex exec resume ... <thread_id> -`: a flag in the id's place was read as a flag."""
    started = json.dumps({"type": "thread.started", "thread_id": hostile})
    t, _ = translate([started])
    assert t.thread_id is None
    t, _ = translate(['{"type":"thread.started","thread_id":"01a2289d-d946-7492"}', started])
    assert t.thread_id == "01a2289d-d946-7492"
