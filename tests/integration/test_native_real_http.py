"""The real openai and anthropic SDK adapters, driven through NativeRunner, against the mock
LLM server (tests/support/mock_llm.py) on loopback."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from specialists.catalog.config import Config, ProviderConfig
from specialists.runners.base import (
    Abort,
    Activity,
    AgentExited,
    Close,
    LaunchSpec,
    RunFinished,
    RunnerEvent,
    Usage,
)
from specialists.runners.native import NativeRunner
from tests.support.mock_llm import MockLLM, Reply, ToolCall

pytestmark = pytest.mark.integration

PROVIDERS = ["openai/mock-model", "openai-responses/mock-model", "anthropic/mock-model"]
FAST = {"max_retries": 2, "retry_base_delay_s": 0.01, "request_timeout_s": 10}


def start(tmp_path: Path, model: str, config: Config | None = None, **kw: object) -> NativeRunner:
    cwd = tmp_path / "work"
    cwd.mkdir(parents=True, exist_ok=True)
    fields: dict[str, object] = {
        "job_id": "j1",
        "job_dir": tmp_path / ".specialists" / "jobs" / "j1",
        "cwd": cwd,
        "prompt": "please help",
        "system_prompt": "You are a test.",
        "model": model,
        "options": FAST,
    }
    fields.update(kw)
    runner = NativeRunner(config=config or Config())
    runner.start(LaunchSpec(**fields))  # type: ignore[arg-type]
    return runner


def until_finished(
    runner: NativeRunner, timeout: float = 60
) -> tuple[RunFinished, list[RunnerEvent]]:
    events: list[RunnerEvent] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events += runner.poll(0.2)
        done = [e for e in events if isinstance(e, RunFinished)]
        if done:
            return done[0], events
    raise AssertionError(f"no RunFinished within {timeout}s; events: {events}")


def finish(runner: NativeRunner) -> None:
    runner.send(Close())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if any(isinstance(e, AgentExited) for e in runner.poll(0.2)):
            return
    raise AssertionError("runner did not exit after close()")


@pytest.mark.parametrize("model", PROVIDERS)
def test_streaming_text(tmp_path: Path, mock_llm: MockLLM, model: str) -> None:
    mock_llm.enqueue(Reply("Streaming works fine.", chunk_size=4))
    runner = start(tmp_path, model)
    finished, events = until_finished(runner)
    assert finished.error is None and finished.text == "Streaming works fine."
    (req,) = mock_llm.model_requests
    assert req.stream and req.model == "mock-model"
    # The specialist's prompt, then the agent tool table's one section (R-G1).
    system = req.system_text()
    assert system.startswith("You are a test.\n\n## Working without blocking (specialists)")
    assert req.last_user_text() == "please help"
    assert "bash" in req.tool_names()
    usage = [e for e in events if isinstance(e, Usage)]
    assert usage and usage[0].input_tokens + usage[0].cache_read_tokens == 12
    finish(runner)


@pytest.mark.parametrize("model", PROVIDERS)
def test_tool_call_round_trip(tmp_path: Path, mock_llm: MockLLM, model: str) -> None:
    mock_llm.enqueue(
        Reply("Let me run it.", tool_calls=[ToolCall("bash", {"command": "echo hi"})]),
        Reply("It printed hi."),
    )
    runner = start(tmp_path, model)
    finished, events = until_finished(runner)
    assert finished.text == "It printed hi.", finished.error
    assert mock_llm.model_requests[-1].tool_results() == ["hi\n"]
    assert any(isinstance(e, Activity) and e.event == "tool_execution_end" for e in events)
    finish(runner)


def test_thinking_is_kept_with_its_signature(tmp_path: Path, mock_llm: MockLLM) -> None:
    mock_llm.enqueue(Reply(thinking="ponder", tool_calls=[ToolCall("ls", {})]), Reply("done"))
    runner = start(tmp_path, "anthropic/mock-model", thinking_level="low")
    finished, events = until_finished(runner)
    assert finished.text == "done", finished.error
    first, second = mock_llm.model_requests
    assert first.json["thinking"]["type"] == "enabled"
    blocks = second.messages()[1]["content"]
    assert blocks[0]["type"] == "thinking" and blocks[0]["signature"].startswith("sig-mock")
    assert any(isinstance(e, Activity) and e.event == "thinking" for e in events)
    finish(runner)


@pytest.mark.parametrize("model", ["openai/mock-model", "anthropic/mock-model"])
def test_429_then_success_retries(tmp_path: Path, mock_llm: MockLLM, model: str) -> None:
    mock_llm.enqueue(Reply.rate_limited(retry_after=0.05), Reply("second time lucky"))
    runner = start(tmp_path, model)
    finished, events = until_finished(runner)
    assert finished.text == "second time lucky" and finished.error is None
    retries = [e for e in events if isinstance(e, Activity) and e.event == "retry"]
    assert len(retries) == 1 and retries[0].fields["category"] == "throttled"
    assert retries[0].fields["delay_s"] == pytest.approx(0.05)
    assert len(mock_llm.model_requests) == 2
    finish(runner)


def test_500s_then_fallback_model(tmp_path: Path, mock_llm: MockLLM) -> None:
    mock_llm.enqueue(*[Reply.server_error()] * 3, Reply("fallback answered"))
    runner = start(tmp_path, "openai/mock-model", fallback_model="anthropic/backup-model")
    finished, events = until_finished(runner)
    assert finished.text == "fallback answered", finished.error
    reqs = mock_llm.model_requests
    assert [r.model for r in reqs] == ["mock-model"] * 3 + ["backup-model"]
    assert reqs[-1].api == "anthropic"
    assert any(isinstance(e, Activity) and e.event == "notice" for e in events)
    finish(runner)


def test_breaker_opens_and_persists_for_the_next_job(tmp_path: Path, mock_llm: MockLLM) -> None:
    options = {**FAST, "max_retries": 0, "breaker_threshold": 1, "breaker_cooldown_s": 600}
    mock_llm.enqueue(Reply.server_error())
    first = start(tmp_path, "openai/mock-model", options=options)
    finished, _ = until_finished(first)
    assert finished.error and "HTTP 500" in finished.error
    finish(first)
    second = start(
        tmp_path / "again", "openai/mock-model", options=options, job_dir=tmp_path / "j2"
    )
    finished, _ = until_finished(second)
    assert finished.error and "circuit open for openai/mock-model" in finished.error
    assert len(mock_llm.model_requests) == 1, "the open breaker spared the provider"
    finish(second)


@pytest.mark.parametrize("model", ["openai/mock-model", "anthropic/mock-model"])
def test_context_overflow_is_not_retried(tmp_path: Path, mock_llm: MockLLM, model: str) -> None:
    mock_llm.enqueue(Reply.context_overflow())
    runner = start(tmp_path, model, fallback_model="openai/other-model")
    finished, events = until_finished(runner)
    assert finished.error and "context window" in finished.error
    assert len(mock_llm.model_requests) == 1
    assert not any(isinstance(e, Activity) and e.event == "retry" for e in events)
    finish(runner)


def test_auth_error_is_config_not_retried(tmp_path: Path, mock_llm: MockLLM) -> None:
    mock_llm.enqueue(Reply.auth_error())
    runner = start(tmp_path, "anthropic/mock-model")
    finished, _ = until_finished(runner)
    assert finished.error and "rejected the API key (HTTP 401)" in finished.error
    assert len(mock_llm.model_requests) == 1
    finish(runner)


@pytest.mark.parametrize("fault", ["malformed_json", "garbage"])
@pytest.mark.parametrize("model", PROVIDERS)
def test_malformed_stream_is_one_clear_error(
    tmp_path: Path, mock_llm: MockLLM, model: str, fault: str
) -> None:
    mock_llm.set_default(Reply("some text here", fault=fault))  # type: ignore[arg-type]
    runner = start(tmp_path, model)
    finished, _ = until_finished(runner)
    assert finished.error is not None
    assert "\n" not in finished.error and "Traceback" not in finished.error
    assert model in finished.error
    finish(runner)


def test_truncated_stream_is_retried_as_transient(tmp_path: Path, mock_llm: MockLLM) -> None:
    mock_llm.enqueue(Reply("cut short", fault="truncate"), Reply("whole answer"))
    runner = start(tmp_path, "openai/mock-model")
    finished, _ = until_finished(runner)
    assert finished.text == "whole answer", finished.error
    finish(runner)


@pytest.mark.parametrize("model", ["openai/mock-model", "anthropic/mock-model"])
def test_unreachable_base_url_fails_fast(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: str
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    started = time.monotonic()
    runner = start(tmp_path, model)
    finished, _ = until_finished(runner, timeout=60)
    assert finished.error and "connection to http://127.0.0.1:9" in finished.error
    assert "gave up after 3 attempts" in finished.error
    assert time.monotonic() - started < 30  # its retries back off seconds, not minutes
    finish(runner)


def test_abort_while_provider_hangs(tmp_path: Path, mock_llm: MockLLM) -> None:
    mock_llm.enqueue(Reply("never finishes", hang_after=2))
    runner = start(tmp_path, "openai/mock-model")
    mock_llm.wait_until_hanging()
    started = time.monotonic()
    runner.send(Abort())
    finished, _ = until_finished(runner, timeout=60)
    assert finished.error == "aborted"
    assert time.monotonic() - started < 2
    mock_llm.release()
    finish(runner)


def test_custom_provider_prices_give_cost(tmp_path: Path, mock_llm: MockLLM) -> None:
    config = Config(
        providers={
            "lab": ProviderConfig(
                "lab",
                base_url=mock_llm.openai_base_url,
                api_key_env="LAB_KEY",
                input_price_per_mtok=1_000_000,
                output_price_per_mtok=2_000_000,
            )
        }
    )
    mock_llm.enqueue(Reply("priced", usage=None))
    runner = start(tmp_path, "lab/mock-model", config=config, env={"LAB_KEY": "secret"})
    finished, events = until_finished(runner)
    assert finished.text == "priced", finished.error
    (usage,) = [e for e in events if isinstance(e, Usage)]
    assert usage.cost_usd == pytest.approx(usage.input_tokens * 1 + usage.output_tokens * 2)
    assert mock_llm.model_requests[0].headers["authorization"] == "Bearer secret"
    assert "LAB_KEY" not in os.environ
    finish(runner)


def test_session_file_is_valid_jsonl(tmp_path: Path, mock_llm: MockLLM) -> None:
    mock_llm.enqueue(Reply(tool_calls=[ToolCall("ls", {})]), Reply("ok"))
    runner = start(tmp_path, "openai/mock-model")
    finished, _ = until_finished(runner)
    finish(runner)
    lines = [json.loads(x) for x in Path(finished.session_file or "").read_text().splitlines()]
    kinds = [i["kind"] for line in lines[1:] for i in line["items"]]
    assert kinds == ["user", "tool_call", "tool_result", "assistant"]
