"""Reading a usage or rate limit's reset time from what the agents say (usage_limits/parse.py)
and from a 429's headers (base/usage_limit.py).

Where the lines come from:
- real, from public transcripts and bug reports: Claude Code's `Claude AI usage limit
  reached|<epoch>` result text and its `Claude usage limit reached. Your limit will reset at
  5pm (Europe/Warsaw).`; Codex's `You've hit your usage limit. Upgrade to Pro (...) or try
  again in 2 days 17 hours 14 minutes.` and `... or try again at Jul 5th, 2026 8:19 PM.`;
  the ChatGPT backend's `usage_limit_reached` body with `resets_at`/`resets_in_seconds`;
  Anthropic's 429 body `This request would exceed your account's rate limit.`;
- real, from Codex 0.171.0 itself: the line it printed for the mock LLM's
  `usage_limit_reached` 429 (tests/integration/test_usage_limits.py), its time changed;
- constructed (same shapes, our own values): Claude Code's newer `5-hour limit reached ∙
  resets 3pm`, pi's provider errors with a retry hint, and every header set.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from specialists.base.display import clock_time
from specialists.base.usage_limit import describe, from_headers
from specialists.features.usage_limits.parse import from_text

BERLIN = ZoneInfo("Europe/Berlin")
# 2026-12-02 10:00:00 UTC = 11:00 in Berlin
NOW = int(datetime(2026, 12, 2, 10, 0, tzinfo=UTC).timestamp() * 1000)


def utc(*args: int) -> int:
    return int(datetime(*args, tzinfo=UTC).timestamp() * 1000)  # type: ignore[misc]


TEXTS = [
    # Claude Code (stream-json result text, real shape)
    ("Claude AI usage limit reached|1796223600", 1796223600 * 1000),
    # Claude Code, newer wording (constructed): the next 3pm in the given zone
    ("5-hour limit reached ∙ resets 3pm", utc(2026, 12, 2, 14, 1)),
    (
        "Claude usage limit reached. Your limit will reset at 5pm (Europe/Warsaw).",
        utc(2026, 12, 2, 16, 1),
    ),
    ("You've hit your limit · resets 9am (Europe/Berlin)", utc(2026, 12, 3, 8, 1)),
    ("Session limit reached ∙ resets 6:30pm (Asia/Kolkata)", utc(2026, 12, 2, 13, 1)),
    # clock times are shown to the minute: the minute's end; one that has just passed is now
    # (10:59 in Berlin, at 11:00), not tomorrow
    ("You've hit your usage limit. Try again at 10:59 AM.", utc(2026, 12, 2, 10, 0)),
    # Codex
    (
        "You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or "
        "try again in 2 days 17 hours 14 minutes.",
        NOW + ((2 * 24 + 17) * 3600 + 14 * 60) * 1000,
    ),
    ("You've hit your usage limit. Try again in 3h 12m.", NOW + (3 * 3600 + 12 * 60) * 1000),
    (  # what Codex 0.171.0 printed for the backend's usage_limit_reached 429 (tests/integration)
        "You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit "
        "https://chatgpt.com/settings/usage to purchase more credits or try again at 1:32 PM.",
        utc(2026, 12, 2, 12, 33),
    ),
    (
        "You've hit your usage limit. Upgrade to Plus to continue using Codex "
        "(https://chatgpt.com/explore/plus), or try again at Dec 5th, 2026 8:19 PM.",
        utc(2026, 12, 5, 19, 20),
    ),
    (
        'unexpected status 429 Too Many Requests: {"error":{"type":"usage_limit_reached",'
        '"message":"The usage limit has been reached","plan_type":"plus",'
        '"resets_at":1796209200,"resets_in_seconds":3600}}',
        1796209200 * 1000,
    ),
    # pi (its provider's error, constructed) and our native loop's own line
    ("429 rate_limit_error: Rate limit exceeded, retry after 30 seconds", NOW + 30_000),
    ("Quota exceeded for quota metric 'requests'; retry in 45s", NOW + 45_000),
    (describe("anthropic", utc(2026, 12, 2, 10, 5)), utc(2026, 12, 2, 10, 5)),
    (
        "openai: usage limit reached (HTTP 429); resets at 2026-12-02T12:30:00+02:00",
        utc(2026, 12, 2, 10, 30),
    ),
]


@pytest.mark.parametrize(("line", "resets_at"), TEXTS)
def test_a_limit_with_its_reset_time(line: str, resets_at: int) -> None:
    found = from_text(line, NOW, BERLIN)
    assert found is not None, line
    assert found.resets_at_ms == resets_at
    assert found.why == " ".join(line.split())[:300]


NOT_A_PAUSE = [
    "",
    None,
    # a limit without a reset: stays an error
    'Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"This '
    "request would exceed your account's rate limit. Please try again later.\"}}",
    "mockhttp: mockhttp is rate limiting or overloaded (HTTP 429): Rate limit reached",
    # a reset without a limit
    "the counter resets at 3pm every day",
    "command failed: retry after 10 seconds",
    # a bare number is not a time; a past epoch or one far away is not believed
    "usage limit reached, resets 5",
    "Claude AI usage limit reached|1000000000",
    "usage limit reached; try again in 40 days",
    "usage limit reached; resets 25:00",
    "usage limit reached; try again at Foo 5th, 2026 8:19 PM",
]


@pytest.mark.parametrize("line", NOT_A_PAUSE)
def test_no_pause_without_both_a_limit_and_a_reset(line: str | None) -> None:
    assert from_text(line, NOW, BERLIN) is None


HEADERS = [
    ({"retry-after": "120"}, NOW + 120_000),
    ({"retry-after-ms": "2500", "retry-after": "3"}, NOW + 2500),
    ({"retry-after": "Wed, 02 Dec 2026 10:07:00 GMT"}, utc(2026, 12, 2, 10, 7)),
    (  # Anthropic: the exhausted limit's reset, not the later one that has room left
        {
            "anthropic-ratelimit-requests-remaining": "0",
            "anthropic-ratelimit-requests-reset": "2026-12-02T10:01:00Z",
            "anthropic-ratelimit-tokens-remaining": "5000",
            "anthropic-ratelimit-tokens-reset": "2026-12-02T10:09:00Z",
        },
        utc(2026, 12, 2, 10, 1),
    ),
    ({"anthropic-ratelimit-unified-reset": "1796216400"}, 1796216400 * 1000),
    (  # OpenAI: Go durations
        {
            "x-ratelimit-remaining-requests": "0",
            "x-ratelimit-reset-requests": "1m30s",
            "x-ratelimit-reset-tokens": "20ms",
        },
        NOW + 90_000,
    ),
    ({"x-ratelimit-reset-tokens": "1h2m3.5s"}, NOW + 3_723_500),
    ({"retry-after": "soon", "content-type": "application/json"}, None),
    ({}, None),
    ({"x-ratelimit-reset-requests": "nan"}, None),
]


@pytest.mark.parametrize(("headers", "resets_at"), HEADERS)
def test_reset_headers(headers: dict[str, str], resets_at: int | None) -> None:
    assert from_headers(headers, NOW) == resets_at


def test_the_time_people_read() -> None:
    today = utc(2026, 12, 2, 13, 5)
    assert clock_time(today, NOW) in {
        datetime.fromtimestamp(today / 1000).astimezone().strftime("%H:%M")
    }
    assert ":" in clock_time(today + 86_400_000 * 2, NOW)
