"""Each runner's usage-limit output reaches the supervisor as a run error it pauses on: the
agents' own lines fed to their translators (no process), the run's error read back by
features/usage_limits/parse.py `from_text`, as the pause reads it.

Lines: Claude Code's `Claude AI usage limit reached|<epoch>` result text and Codex's `You've
hit your usage limit ... try again in ...` are real messages (public bug reports); the JSON
around them, pi's error message and the native loop's 429 (the mock's headers through the
official SDK's exception) are constructed in the shapes those agents print.
"""

from __future__ import annotations

import calendar
import json
import time

import httpx2 as httpx
import openai

from specialists.base.clock import FakeClock
from specialists.features.usage_limits.parse import from_text
from specialists.native.calling import RetryPolicy
from specialists.native.providers.common import translate_sdk_error
from specialists.runners.base import RunFinished
from specialists.runners.claude_events import ClaudeTranslator
from specialists.runners.codex_events import CodexTranslator
from specialists.runners.pi_protocol import PiProtocol
from tests.support.driving import of

NOW = int(time.time() * 1000)
AT = NOW // 1000 + 3 * 3600  # the reset, epoch seconds


def _error(events: list) -> str:  # type: ignore[type-arg]
    (fin,) = of(events, RunFinished)
    assert fin.error is not None
    return fin.error


def test_claude_code_usage_limit_result() -> None:
    t = ClaudeTranslator()
    text = f"Claude AI usage limit reached|{AT}"
    t.feed(
        {
            "type": "assistant",
            "session_id": "s1",
            "message": {
                "id": "m1",
                "model": "<synthetic>",
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
            },
        },
        0,
    )
    line = {"type": "result", "subtype": "success", "is_error": True, "result": text,
            "session_id": "s1"}  # fmt: skip
    limit = from_text(_error(t.feed(line, 0)), NOW)
    assert limit is not None and limit.resets_at_ms == AT * 1000


def test_codex_usage_limit_turn_failed() -> None:
    t = CodexTranslator()
    message = (
        "You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or "
        "try again in 2 hours 5 minutes."
    )
    t.feed({"type": "error", "message": message}, 0)
    error = _error(t.feed({"type": "turn.failed", "error": {"message": message}}, 0))
    limit = from_text(error, NOW)
    assert limit is not None and limit.resets_at_ms == NOW + (2 * 3600 + 5 * 60) * 1000


def test_codex_usage_limit_body() -> None:
    body = json.dumps(
        {"error": {"type": "usage_limit_reached", "message": "The usage limit has been reached",
                   "resets_at": AT, "resets_in_seconds": 10800}}
    )  # fmt: skip
    error = _error(CodexTranslator().feed({"type": "turn.failed", "error": {"message": body}}, 0))
    limit = from_text(error, NOW)
    assert limit is not None and limit.resets_at_ms == AT * 1000, error
    assert error.startswith("The usage limit has been reached (usage limit; resets at ")


def test_pi_provider_error_with_a_retry_hint() -> None:
    clock = FakeClock()
    p = PiProtocol(clock=clock, settle_timeout_s=0.3)
    p.prompt("task")
    p.take_outbox()
    message = "429 Rate limit exceeded for requests: quota resets in 45s"
    failed = {"role": "assistant", "content": [], "stopReason": "error", "errorMessage": message}
    said = p.feed(b'{"type":"response","id":"sp-1","command":"prompt","success":true}')
    said += p.feed(json.dumps({"type": "message_end", "message": failed}).encode())
    said += p.feed(b'{"type":"agent_end","messages":[],"willRetry":false}')
    clock.advance(0.5)
    said += p.tick()
    p.take_outbox()
    said += p.feed(b'{"type":"response","id":"sp-2","command":"get_last_assistant_text",'
                   b'"success":true,"data":{"text":null}}')  # fmt: skip
    said += p.feed(b'{"type":"response","id":"sp-3","command":"get_state","success":true,'
                   b'"data":{"sessionFile":"/s.jsonl","isStreaming":false}}')  # fmt: skip
    said += p.tick()
    limit = from_text(_error(said), NOW)
    assert limit is not None and limit.resets_at_ms == NOW + 45_000


def test_a_native_429_with_reset_headers_becomes_a_line_the_supervisor_pauses_on() -> None:
    reset = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 600))
    headers = {
        "anthropic-ratelimit-requests-remaining": "0",
        "anthropic-ratelimit-requests-reset": reset,
        "retry-after": "3",
    }
    request = httpx.Request("POST", "http://127.0.0.1:9/v1/messages")
    response = httpx.Response(429, headers=headers, request=request)
    exc = openai.RateLimitError("Rate limit reached", response=response, body=None)
    err = translate_sdk_error(exc, label="anthropic/claude", base_url=None, timeout_s=1, sdk=openai)
    assert err.category == "throttled" and err.retry_after is not None
    assert err.retry_after > 590  # waits longer than the policy will: the run fails now
    assert RetryPolicy().delay(1, err) is None
    limit = from_text(err.one_line(), int(time.time() * 1000))
    assert limit is not None
    expected = calendar.timegm(time.strptime(reset, "%Y-%m-%dT%H:%M:%SZ")) * 1000
    assert limit.resets_at_ms == expected


def test_a_native_429_without_reset_headers_stays_an_error() -> None:
    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    response = httpx.Response(429, headers={"retry-after": "2"}, request=request)
    exc = openai.RateLimitError("Rate limit reached", response=response, body=None)
    err = translate_sdk_error(exc, label="openai/gpt", base_url=None, timeout_s=1, sdk=openai)
    assert err.retry_after == 2.0  # retried in place, as before
    assert "usage limit" not in err.one_line()
