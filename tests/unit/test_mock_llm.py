"""The mock LLM, driven by the real openai and anthropic SDKs, so it is known to be faithful."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from tests.support.mock_llm import MockLLM, Reply, Request, ToolCall

TOOLS_OPENAI: Any = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "run a command",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
]
TOOLS_ANTHROPIC: Any = [
    {
        "name": "bash",
        "description": "run a command",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
    }
]
USER: Any = [{"role": "user", "content": "hi"}]


@pytest.fixture
def mock() -> Iterator[MockLLM]:
    with MockLLM() as m:
        yield m


def oai(m: MockLLM) -> openai.OpenAI:
    return openai.OpenAI(base_url=m.openai_base_url, api_key="sk-test", max_retries=0)


def anth(m: MockLLM) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=m.base_url, api_key="dummy", max_retries=0)


# --------------------------------------------------------------------------- chat completions


def test_chat_stream_text_and_usage(mock: MockLLM) -> None:
    mock.enqueue(Reply("Hello there, streaming world", usage=None, chunk_size=5))
    stream = oai(mock).chat.completions.create(
        model="mock-model", messages=USER, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    deltas = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta]
    assert "".join(d or "" for d in deltas) == "Hello there, streaming world"
    assert len([d for d in deltas if d]) == 6  # really streamed in pieces
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.prompt_tokens == 12
    (req,) = mock.requests
    assert req.path == "/v1/chat/completions" and req.api == "chat" and req.stream
    assert req.last_user_text() == "hi"
    assert req.headers["authorization"] == "Bearer sk-test"


def test_chat_stream_tool_call_arguments_arrive_in_pieces(mock: MockLLM) -> None:
    call = ToolCall("bash", {"command": "echo a long command line"}, id="call_1")
    mock.enqueue(Reply(tool_calls=[call], chunk_size=6))
    stream = oai(mock).chat.completions.create(
        model="mock-model", messages=USER, tools=TOOLS_OPENAI, stream=True
    )
    pieces: list[str] = []
    names: list[str] = []
    finish = None
    for chunk in stream:
        choice = chunk.choices[0]
        finish = choice.finish_reason or finish
        for tc in choice.delta.tool_calls or []:
            assert tc.index == 0
            if tc.function and tc.function.name:
                names.append(tc.function.name)
            if tc.function and tc.function.arguments:
                pieces.append(tc.function.arguments)
    assert names == ["bash"]
    assert len(pieces) > 3
    assert json.loads("".join(pieces)) == {"command": "echo a long command line"}
    assert finish == "tool_calls"


def test_chat_non_streaming_and_default_rule(mock: MockLLM) -> None:
    def rule(req: Request) -> Reply:
        results = req.tool_results()
        return Reply(f"saw {results[-1]!r}") if results else Reply("no tools yet")

    mock.set_default(rule)
    client = oai(mock)
    first = client.chat.completions.create(model="mock-model", messages=USER)
    assert first.choices[0].message.content == "no tools yet"
    messages: list[Any] = [
        *USER,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "out\n"},
    ]
    second = client.chat.completions.create(model="mock-model", messages=messages)
    assert second.choices[0].message.content == "saw 'out\\n'"


def test_chat_429_is_rate_limit_error_with_retry_after(mock: MockLLM) -> None:
    mock.enqueue(Reply.rate_limited(retry_after=7))
    with pytest.raises(openai.RateLimitError) as info:
        oai(mock).chat.completions.create(model="mock-model", messages=USER)
    assert info.value.status_code == 429
    assert info.value.response.headers["retry-after"] == "7"
    assert info.value.code == "rate_limit_exceeded"


def test_chat_context_overflow_is_bad_request_in_openai_shape(mock: MockLLM) -> None:
    mock.enqueue(Reply.context_overflow(tokens=130_000, limit=128_000))
    with pytest.raises(openai.BadRequestError) as info:
        oai(mock).chat.completions.create(model="mock-model", messages=USER, stream=True)
    assert info.value.code == "context_length_exceeded"
    assert "maximum context length is 128000 tokens" in info.value.message


def test_chat_500_is_internal_server_error(mock: MockLLM) -> None:
    mock.enqueue(Reply.server_error())
    with pytest.raises(openai.InternalServerError):
        oai(mock).chat.completions.create(model="mock-model", messages=USER)


def test_chat_malformed_stream_raises(mock: MockLLM) -> None:
    mock.enqueue(Reply("abcdefghijklmnop", fault="malformed_json", fault_after=2))
    stream = oai(mock).chat.completions.create(model="mock-model", messages=USER, stream=True)
    with pytest.raises(json.JSONDecodeError):
        list(stream)


def test_chat_truncated_stream_raises(mock: MockLLM) -> None:
    mock.enqueue(Reply("abcdefghijklmnop", fault="truncate", fault_after=2))
    stream = oai(mock).chat.completions.create(model="mock-model", messages=USER, stream=True)
    with pytest.raises(openai.APIConnectionError):  # the SDK's wrap of the transport error
        list(stream)


def test_hang_blocks_until_release(mock: MockLLM) -> None:
    mock.enqueue(Reply("abc", hang_after=1))
    got: list[str] = []

    def consume() -> None:
        stream = oai(mock).chat.completions.create(model="mock-model", messages=USER, stream=True)
        got.extend(
            c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content
        )

    thread = threading.Thread(target=consume)
    thread.start()
    mock.wait_until_hanging(1)
    assert got == [] and thread.is_alive()
    mock.release()
    thread.join(timeout=10)
    assert not thread.is_alive() and "".join(got) == "abc"
    assert mock.hanging == 0


def test_slow_stream_spaces_chunks(mock: MockLLM) -> None:
    mock.enqueue(Reply("abcd", chunk_size=1, chunk_delay=0.05))
    started = time.monotonic()
    stream = oai(mock).chat.completions.create(model="mock-model", messages=USER, stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == "abcd"
    assert time.monotonic() - started >= 0.2  # 5+ events after the first, 50 ms apart


def test_stop_releases_a_hanging_stream() -> None:
    m = MockLLM().start()
    m.enqueue(Reply("x", hang_after=0))
    errors: list[BaseException] = []

    def consume() -> None:
        try:
            list(oai(m).chat.completions.create(model="mock-model", messages=USER, stream=True))
        except Exception as exc:
            errors.append(exc)

    thread = threading.Thread(target=consume)
    thread.start()
    m.wait_until_hanging(1)
    m.stop()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert errors  # the client sees a broken stream, not a silent empty answer


def test_models_endpoint_for_both_sdks(mock: MockLLM) -> None:
    assert [m.id for m in oai(mock).models.list()] == ["mock-model"]
    assert [m.id for m in anth(mock).models.list()] == ["mock-model"]


def test_unknown_route_is_404_and_recorded(mock: MockLLM) -> None:
    req = urllib.request.Request(mock.base_url + "/v1/nope", data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req, timeout=5)
    assert info.value.code == 404
    assert mock.requests[-1].path == "/v1/nope" and mock.model_requests == []


# --------------------------------------------------------------------------- responses


def test_responses_stream_text_tool_call_and_usage(mock: MockLLM) -> None:
    mock.enqueue(
        Reply(
            text="Let me check.",
            tool_calls=[ToolCall("bash", {"command": "ls"}, id="call_9")],
            thinking="hmm",
        )
    )
    client = oai(mock)
    tools: Any = [
        {
            "type": "function",
            "name": "bash",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        }
    ]
    with client.responses.stream(model="mock-model", input="hi", tools=tools) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds
    assert "response.function_call_arguments.delta" in kinds
    assert final.output_text == "Let me check."
    calls = [item for item in final.output if item.type == "function_call"]
    assert [(c.name, c.call_id, json.loads(c.arguments)) for c in calls] == [
        ("bash", "call_9", {"command": "ls"})
    ]
    assert final.usage is not None and final.usage.input_tokens == 12
    assert mock.requests[-1].api == "responses"


def test_responses_non_streaming(mock: MockLLM) -> None:
    mock.enqueue(Reply("plain"))
    resp = oai(mock).responses.create(model="mock-model", input="hi")
    assert resp.output_text == "plain" and resp.status == "completed"


def test_responses_429(mock: MockLLM) -> None:
    mock.enqueue(Reply.rate_limited())
    with pytest.raises(openai.RateLimitError):
        oai(mock).responses.create(model="mock-model", input="hi", stream=True)


# --------------------------------------------------------------------------- anthropic


def test_anthropic_stream_thinking_text_and_tool_use(mock: MockLLM) -> None:
    mock.enqueue(
        Reply(
            thinking="think first",
            text="Running it.",
            tool_calls=[ToolCall("bash", {"command": "echo hi"}, id="toolu_1")],
            chunk_size=4,
        )
    )
    client = anth(mock)
    with client.messages.stream(
        model="claude-x",
        max_tokens=100,
        messages=USER,
        tools=TOOLS_ANTHROPIC,
    ) as stream:
        deltas = [e.delta.type for e in stream if e.type == "content_block_delta"]
        final = stream.get_final_message()
    assert {"thinking_delta", "signature_delta", "text_delta", "input_json_delta"} <= set(deltas)
    assert deltas.count("input_json_delta") > 2
    kinds = [b.type for b in final.content]
    assert kinds == ["thinking", "text", "tool_use"]
    assert final.content[0].thinking == "think first"
    assert final.content[1].text == "Running it."
    tool = final.content[2]
    assert tool.type == "tool_use" and tool.input == {"command": "echo hi"} and tool.id == "toolu_1"
    assert final.stop_reason == "tool_use"
    assert final.usage.input_tokens == 12 and final.usage.output_tokens > 1


def test_anthropic_non_streaming_and_tool_results(mock: MockLLM) -> None:
    mock.enqueue(Reply("ok"))
    messages: Any = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "res"}],
        },
    ]
    msg = anth(mock).messages.create(
        model="claude-x", max_tokens=10, messages=messages, system="be brief"
    )
    assert msg.content[0].text == "ok" and msg.stop_reason == "end_turn"
    req = mock.requests[-1]
    assert req.api == "anthropic" and req.tool_results() == ["res"]
    assert req.last_user_text() == "go" and req.system_text() == "be brief"
    assert req.api_key == "dummy"


def test_anthropic_429_and_context_overflow(mock: MockLLM) -> None:
    mock.enqueue(Reply.rate_limited(retry_after=3), Reply.context_overflow())
    client = anth(mock)
    with pytest.raises(anthropic.RateLimitError) as rl:
        client.messages.create(model="claude-x", max_tokens=10, messages=USER)
    assert rl.value.response.headers["retry-after"] == "3"
    assert rl.value.body["error"]["type"] == "rate_limit_error"
    with pytest.raises(anthropic.BadRequestError) as bad:
        client.messages.create(model="claude-x", max_tokens=10, messages=USER)
    assert "prompt is too long: 210000 tokens > 200000 maximum" in bad.value.message


def test_anthropic_overloaded_error_event_mid_stream(mock: MockLLM) -> None:
    mock.enqueue(Reply("abcdefgh", fault="error_event", fault_after=3))
    with (
        pytest.raises(anthropic.APIStatusError, match="Overloaded"),
        anth(mock).messages.stream(model="claude-x", max_tokens=10, messages=USER) as stream,
    ):
        list(stream)


def test_anthropic_malformed_stream_raises(mock: MockLLM) -> None:
    mock.enqueue(Reply("abcdefgh", fault="malformed_json"))
    with (
        pytest.raises(json.JSONDecodeError),
        anth(mock).messages.stream(model="claude-x", max_tokens=10, messages=USER) as stream,
    ):
        list(stream)


def test_count_tokens_and_head(mock: MockLLM) -> None:
    result = anth(mock).messages.count_tokens(model="claude-x", messages=USER)
    assert result.input_tokens > 0
    head = urllib.request.Request(mock.base_url + "/", method="HEAD")
    with urllib.request.urlopen(head, timeout=5) as resp:
        assert resp.status == 200


def test_concurrent_requests_each_get_one_reply(mock: MockLLM) -> None:
    mock.enqueue(*[f"r{i}" for i in range(8)])
    results: list[str] = []
    lock = threading.Lock()

    def call() -> None:
        out = oai(mock).chat.completions.create(model="mock-model", messages=USER)
        with lock:
            results.append(out.choices[0].message.content or "")

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert sorted(results) == sorted(f"r{i}" for i in range(8))
    assert mock.pending == 0 and len(mock.wait_for_requests(8)) == 8


def test_network_guard_blocks_non_loopback() -> None:
    import socket

    from tests.conftest import NetworkAccessDenied, _blocked

    sock = socket.socket()
    try:
        with pytest.raises(NetworkAccessDenied):
            sock.connect(("192.0.2.1", 443))  # TEST-NET-1, never routed
    finally:
        sock.close()
    _blocked.clear()  # the attempt was deliberate; don't fail this test for it


def test_a_rule_that_raises_answers_500_and_is_recorded(mock: MockLLM) -> None:
    def rule(req: Request) -> Reply:
        raise KeyError("oops")

    mock.set_default(rule)
    with pytest.raises(openai.InternalServerError, match="mock rule raised KeyError"):
        oai(mock).chat.completions.create(model="mock-model", messages=USER)
    assert mock.errors == ["rule: KeyError: 'oops'"]


def test_anthropic_tool_call_with_raw_string_arguments(mock: MockLLM) -> None:
    mock.enqueue(Reply(tool_calls=[ToolCall("bash", '{"command": "ls"}')]))
    with anth(mock).messages.stream(model="claude-x", max_tokens=10, messages=USER) as stream:
        final = stream.get_final_message()
    assert final.content[0].input == {"command": "ls"}
