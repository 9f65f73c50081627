"""Provider adapters' pure halves (request builders, stream parsers), the registry and the
replay provider. No network, no SDK client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specialists.base.errors import AgentUnavailable, ConfigError
from specialists.catalog.config import Config, ModelConfig, ProviderConfig
from specialists.native.messages import AssistantText, Thinking, ToolCall, ToolResult, UserMessage
from specialists.native.model import (
    Done,
    ModelError,
    ModelRequest,
    TextDelta,
    ThinkingDelta,
    ToolCallDone,
    ToolSpec,
    UsageReport,
)
from specialists.native.providers.anthropic import AnthropicStreamParser, anthropic_params
from specialists.native.providers.openai_chat import ChatStreamParser, chat_params
from specialists.native.providers.openai_responses import ResponsesStreamParser, responses_params
from specialists.native.providers.registry import make_client, resolve_model
from specialists.native.providers.replay import ReplayModel

CONVERSATION = (
    UserMessage("list files"),
    Thinking("hmm", signature="sig"),
    AssistantText("looking"),
    ToolCall("c1", "ls", {"path": "."}),
    ToolResult("c1", "ls", "a.py", is_error=False),
    UserMessage("and steer", source="steer"),
)
REQUEST = ModelRequest(
    "m",
    "sys",
    CONVERSATION,
    tools=(ToolSpec("ls", "list", {"type": "object"}),),
    max_tokens=100,
)


def test_chat_params_shape() -> None:
    params = chat_params(REQUEST, provider="openai")
    assert params["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "list files"},
        {
            "role": "assistant",
            "content": "looking",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "ls", "arguments": '{"path":"."}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
        {"role": "user", "content": "and steer"},
    ]
    assert params["max_completion_tokens"] == 100
    assert params["stream_options"] == {"include_usage": True}
    assert params["tools"][0]["function"]["name"] == "ls"
    assert chat_params(REQUEST, provider="vllm")["max_tokens"] == 100


def test_chat_parser_assembles_tool_calls_and_usage() -> None:
    p = ChatStreamParser("openai/m")
    chunks = [
        {"choices": [{"delta": {"content": "Hi "}}]},
        {"choices": [{"delta": {"reasoning_content": "think"}}]},
        {
            "choices": [
                {
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "t1",
                                "function": {"name": "ls", "arguments": '{"pa'},
                            }
                        ]
                    }
                }
            ]
        },
        {
            "choices": [
                {"delta": {"tool_calls": [{"index": 0, "function": {"arguments": 'th":"."}'}}]}}
            ]
        },
        {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]},
        {
            "choices": [],
            "usage": {
                "prompt_tokens": 50,
                "completion_tokens": 7,
                "prompt_tokens_details": {"cached_tokens": 20},
            },
        },
    ]
    events = [e for c in chunks for e in p.feed(c)] + list(p.finish())
    assert events == [
        TextDelta("Hi "),
        ThinkingDelta("think"),
        ToolCallDone(ToolCall("t1", "ls", {"path": "."})),
        UsageReport(30, 7, 20),
        Done("tool_use", "tool_calls"),
    ]


def test_chat_parser_bad_arguments_and_empty_stream() -> None:
    p = ChatStreamParser("x/m")
    list(
        p.feed(
            {
                "choices": [
                    {
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "t",
                                    "function": {"name": "ls", "arguments": "{oops"},
                                }
                            ]
                        }
                    }
                ]
            }
        )
    )
    call = next(e for e in p.finish() if isinstance(e, ToolCallDone)).call
    assert call.arguments_error and "not valid JSON" in call.arguments_error
    with pytest.raises(ModelError, match="empty or unreadable") as exc:
        list(ChatStreamParser("x/m").finish())
    assert exc.value.category == "fatal"


def test_responses_params_and_parser() -> None:
    params = responses_params(ModelRequest("m", "sys", CONVERSATION, thinking="high"))
    assert params["instructions"] == "sys" and params["store"] is False
    assert params["reasoning"] == {"effort": "high", "summary": "auto"}
    kinds = [i.get("type", i.get("role")) for i in params["input"]]
    assert kinds == ["user", "assistant", "function_call", "function_call_output", "user"]
    p = ResponsesStreamParser("openai-responses/m")
    feed = [
        {"type": "response.output_text.delta", "delta": "ok"},
        {
            "type": "response.output_item.done",
            "item": {"type": "function_call", "call_id": "c9", "name": "ls", "arguments": "{}"},
        },
        {
            "type": "response.completed",
            "response": {"usage": {"input_tokens": 5, "output_tokens": 2}},
        },
    ]
    events = [e for f in feed for e in p.feed(f)] + list(p.finish())
    assert events == [
        TextDelta("ok"),
        ToolCallDone(ToolCall("c9", "ls", {})),
        UsageReport(5, 2, 0),
        Done("tool_use", None),
    ]
    with pytest.raises(ModelError) as exc:
        list(
            ResponsesStreamParser("x").feed(
                {"type": "error", "code": "rate_limit_exceeded", "message": "slow"}
            )
        )
    assert exc.value.category == "throttled"


def test_anthropic_params_merge_roles_and_thinking_budget() -> None:
    params = anthropic_params(
        ModelRequest("m", "sys", CONVERSATION, thinking="low", max_tokens=100)
    )
    assert [m["role"] for m in params["messages"]] == ["user", "assistant", "user"]
    assistant = params["messages"][1]["content"]
    assert [b["type"] for b in assistant] == ["thinking", "text", "tool_use"]
    last_user = params["messages"][2]["content"]
    assert [b["type"] for b in last_user] == ["tool_result", "text"]
    assert params["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert params["max_tokens"] > 2048
    assert anthropic_params(ModelRequest("m", "", (UserMessage("x"),)))["max_tokens"] == 8192


def test_anthropic_parser() -> None:
    p = AnthropicStreamParser("anthropic/m")
    feed = [
        {
            "type": "message_start",
            "message": {
                "usage": {"input_tokens": 9, "output_tokens": 1, "cache_read_input_tokens": 3}
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking"}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "hm"},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "S"},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "tu", "name": "ls"},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"path"'},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": ':"x"}'},
        },
        {"type": "content_block_stop", "index": 1},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 12},
        },
        {"type": "message_stop"},
    ]
    events = [e for f in feed for e in p.feed(f)] + list(p.finish())
    assert events == [
        ThinkingDelta("hm"),
        ThinkingDelta("", signature="S"),
        ToolCallDone(ToolCall("tu", "ls", {"path": "x"})),
        UsageReport(9, 12, 3, 0),
        Done("tool_use", "tool_use"),
    ]
    cut = AnthropicStreamParser("a/m")
    list(cut.feed({"type": "message_start", "message": {}}))
    with pytest.raises(ModelError, match="ended before") as exc:
        list(cut.finish())
    assert exc.value.category == "transient"


# --- registry ----------------------------------------------------------------------------


def test_missing_key_names_the_variable() -> None:
    with pytest.raises(AgentUnavailable) as exc:
        resolve_model("openai/gpt-4.1", Config(), {})
    assert exc.value.one_line() == (
        "OPENAI_API_KEY is not set: export it or configure a provider in config.toml"
    )
    with pytest.raises(AgentUnavailable, match="ANTHROPIC_API_KEY"):
        resolve_model("anthropic/claude", Config(), {})


def test_unknown_provider_and_bad_model_names() -> None:
    with pytest.raises(ConfigError, match="unknown provider 'nope'") as exc:
        resolve_model("nope/x", Config(), {})
    assert exc.value.hint and "[providers.nope]" in exc.value.hint
    with pytest.raises(ConfigError, match="must be written provider/model"):
        resolve_model("gpt-4.1", Config(), {})


def test_builtins_and_env_overrides() -> None:
    r = resolve_model("openrouter/anthropic/claude-3.5", Config(), {"OPENROUTER_API_KEY": "k"})
    assert (r.api, r.base_url, r.api_key, r.info.model_id) == (
        "openai-chat",
        "https://openrouter.ai/api/v1",
        "k",
        "anthropic/claude-3.5",
    )
    o = resolve_model("ollama/qwen3", Config(), {})
    assert o.api_key is None and o.base_url == "http://localhost:11434/v1"
    a = resolve_model(
        "anthropic/c", Config(), {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "http://h/"}
    )
    assert a.base_url == "http://h" and a.api == "anthropic"
    oa = resolve_model(
        "openai/g", Config(), {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://p/v1"}
    )
    assert oa.base_url == "http://p/v1"


def test_custom_provider_with_prices() -> None:
    config = Config(
        providers={
            "lab": ProviderConfig(
                "lab",
                base_url="http://lab:9000/v1",
                api="anthropic",
                api_key_env="LAB_KEY",
                input_price_per_mtok=3,
                output_price_per_mtok=15,
                models={"big": ModelConfig(context_window=1000, output_price_per_mtok=30)},
            ),
            "broken": ProviderConfig("broken"),
        }
    )
    r = resolve_model("lab/big", config, {"LAB_KEY": "s"})
    assert (r.api, r.base_url, r.api_key) == ("anthropic", "http://lab:9000/v1", "s")
    assert r.info.context_window == 1000
    assert (r.info.prices.input, r.info.prices.output) == (3, 30)
    assert r.info.prices.cost(UsageReport(1_000_000, 1_000_000)) == pytest.approx(33)
    with pytest.raises(ConfigError, match="base_url"):
        resolve_model("broken/x", config, {})


# --- replay ------------------------------------------------------------------------------


def _recording(tmp_path: Path, *turns: object, suffix: str = ".jsonl") -> Path:
    path = tmp_path / f"rec{suffix}"
    path.write_text("# a recording\n" + "\n".join(json.dumps(t) for t in turns) + "\n")
    return path


def test_replay_plays_turns_in_order_and_stops_clearly(tmp_path: Path) -> None:
    path = _recording(
        tmp_path,
        {"text": "let me look", "tool_calls": [{"name": "ls", "arguments": {}}]},
        {"text": "two files", "usage": {"input_tokens": 3, "output_tokens": 2}},
    )
    model = ReplayModel(path)
    req = ModelRequest("", "", (UserMessage("x"),))
    first = list(model.stream(req))
    assert "".join(e.text for e in first if isinstance(e, TextDelta)) == "let me look"
    assert isinstance(first[-1], Done) and first[-1].stop_reason == "tool_use"
    second = list(model.stream(req))
    assert UsageReport(3, 2) in second
    with pytest.raises(ModelError, match=r"asked for model turn 3 but .* records only 2") as exc:
        list(model.stream(req))
    assert exc.value.category == "fatal"


def test_replay_resumes_after_turns_already_in_session(tmp_path: Path) -> None:
    path = _recording(tmp_path, {"text": "one"}, {"text": "two"})
    req = ModelRequest("", "", (UserMessage("x"), AssistantText("one"), UserMessage("more")))
    events = list(ReplayModel(path).stream(req))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "two"


def test_replay_recorded_error_and_yaml(tmp_path: Path) -> None:
    path = tmp_path / "rec.yaml"
    path.write_text(
        "turns:\n  - error: {category: throttled, message: busy, retry_after: 0}\n  - text: fine\n"
    )
    model = ReplayModel(path)
    req = ModelRequest("", "", (UserMessage("x"),))
    with pytest.raises(ModelError) as exc:
        list(model.stream(req))
    assert exc.value.category == "throttled" and exc.value.retry_after == 0
    assert Done("end") in list(model.stream(req))


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("{not json", "not valid JSON"),
        ('{"tool_calls": "ls"}', "tool_calls must be a list"),
        ("{}", "needs text, thinking or tool_calls"),
        ('{"error": {"category": "bad"}}', "error needs a category"),
    ],
)
def test_replay_bad_recordings(tmp_path: Path, line: str, needle: str) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(ConfigError, match=needle):
        ReplayModel(path)


def test_replay_model_name_resolves_relative_to_cwd(tmp_path: Path) -> None:
    _recording(tmp_path, {"text": "hi"})
    r = resolve_model("replay/rec.jsonl", Config(), {}, tmp_path)
    assert r.api == "replay" and r.api_key is None
    assert isinstance(make_client(r)(), ReplayModel)
    with pytest.raises(ConfigError, match="not found"):
        resolve_model("replay/missing.jsonl", Config(), {}, tmp_path)


def test_the_sdk_clients_share_one_tls_context_per_ca_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Building a TLS context reads the whole CA bundle (about 100 ms): one per process and
    CA setting, made once (a fork server makes it for the supervisors it forks)."""
    import certifi
    import openai

    from specialists.native.providers import common

    monkeypatch.setattr(common, "_tls", {})
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    first = common.tls_context()
    assert common.tls_context() is first
    monkeypatch.setenv("SSL_CERT_FILE", certifi.where())  # another CA setting: its own
    other = common.tls_context()
    assert other is not first and common.tls_context() is other
    client = common.http_client(openai)
    assert isinstance(client, openai.DefaultHttpxClient)
    client.close()
