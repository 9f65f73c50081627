"""Error classification, the retry policy and the persistent circuit breaker."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from specialists.native.breaker import BreakerConfig, CircuitBreaker, breaker_health
from specialists.native.calling import RetryPolicy
from specialists.native.model import ModelError, classify


@pytest.mark.parametrize(
    ("status", "code", "message", "expected"),
    [
        (429, "rate_limit_exceeded", "slow down", "throttled"),
        (529, None, "Overloaded", "throttled"),
        (None, "overloaded_error", "Overloaded", "throttled"),
        (500, None, "boom", "transient"),
        (503, None, "unavailable", "transient"),
        (408, None, "timeout", "transient"),
        (401, "invalid_api_key", "bad key", "config"),
        (403, None, "forbidden", "config"),
        (404, None, "model not found", "config"),
        (429, "insufficient_quota", "You exceeded your current quota", "config"),
        (400, "context_length_exceeded", "too long", "overflow"),
        (
            400,
            "invalid_request_error",
            "prompt is too long: 210000 tokens > 200000 maximum",
            "overflow",
        ),
        (400, None, "This model's maximum context length is 8192 tokens", "overflow"),
        (413, None, "payload too large", "overflow"),
        (400, "invalid_request_error", "temperature must be <= 2", "fatal"),
        (422, None, "unprocessable", "fatal"),
        (None, None, "something odd", "fatal"),
        (None, "server_error", "oops", "transient"),
    ],
)
def test_classify(status: int | None, code: str | None, message: str, expected: str) -> None:
    assert classify(status, code, message) == expected


def test_retry_policy_backs_off_and_gives_up() -> None:
    policy = RetryPolicy(max_retries=3, base_delay_s=1, max_delay_s=3, jitter=0)
    err = ModelError("x", category="transient")
    assert [policy.delay(n, err) for n in (1, 2, 3, 4)] == [1, 2, 3, None]


def test_retry_policy_honours_retry_after_and_never_retries_config() -> None:
    policy = RetryPolicy(max_retries=3, max_retry_after_s=10)
    assert policy.delay(1, ModelError("x", category="throttled", retry_after=2.5)) == 2.5
    assert policy.delay(1, ModelError("x", category="throttled", retry_after=99)) is None
    for category in ("config", "overflow", "fatal"):
        assert policy.delay(1, ModelError("x", category=category)) is None  # type: ignore[arg-type]


def test_retry_jitter_stays_in_band() -> None:
    policy = RetryPolicy(base_delay_s=10, jitter=0.2)
    err = ModelError("x", category="transient")
    assert policy.delay(1, err, rand=lambda: 0.0) == pytest.approx(8)
    assert policy.delay(1, err, rand=lambda: 1.0) == pytest.approx(12)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_breaker_state_machine(tmp_path: Path) -> None:
    clock = Clock()
    cfg = BreakerConfig(failure_threshold=2, cooldown_s=30)
    b = CircuitBreaker("openai/gpt", directory=tmp_path, config=cfg, clock=clock)
    assert b.allow() is None
    b.record_failure("500 boom")
    assert b.allow() is None, "one failure is below the threshold"
    b.record_failure("500 boom")
    refused = b.allow()
    assert (
        refused is not None and "circuit open for openai/gpt" in refused and "500 boom" in refused
    )
    clock.now += 31
    assert b.allow() is None, "after the cooldown one trial call goes through"
    assert b.snapshot()["state"] == "half_open"
    assert b.allow() is not None, "only one trial at a time"
    b.record_failure("still down")
    assert b.snapshot()["state"] == "open"
    clock.now += 31
    assert b.allow() is None
    b.record_success()
    assert b.snapshot()["state"] == "closed" and b.snapshot()["failures"] == 0


def test_success_resets_failure_count(tmp_path: Path) -> None:
    b = CircuitBreaker("k", directory=tmp_path, config=BreakerConfig(failure_threshold=2))
    b.record_failure("x")
    b.record_success()
    b.record_failure("y")
    assert b.allow() is None


def test_damaged_breaker_file_counts_as_closed(tmp_path: Path) -> None:
    b = CircuitBreaker("k", directory=tmp_path)
    tmp_path.mkdir(exist_ok=True)
    b.path.write_text("{not json")
    assert b.allow() is None
    b.record_failure("x")
    assert json.loads(b.path.read_text())["failures"] == 1


def test_breaker_health_lists_breakers(tmp_path: Path) -> None:
    CircuitBreaker("b/model", directory=tmp_path).record_failure("x")
    CircuitBreaker("a/model", directory=tmp_path).record_failure("y")
    (tmp_path / "junk.json").write_text("nope")
    health = breaker_health(tmp_path)
    assert [h["key"] for h in health] == ["a/model", "b/model"]
    assert health[0]["failures"] == 1 and health[0]["state"] == "closed"
    assert breaker_health(tmp_path / "missing") == []


def test_breaker_default_dir_follows_xdg_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    CircuitBreaker("p/m").record_failure("x")
    assert [h["key"] for h in breaker_health()] == ["p/m"]
    assert list((tmp_path / "specialists" / "breakers").glob("*.json"))


_FAIL_ONCE = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from specialists.native.breaker import BreakerConfig, CircuitBreaker
    b = CircuitBreaker("openrouter/x", directory=Path(sys.argv[1]),
                       config=BreakerConfig(failure_threshold=2, cooldown_s=600))
    refused = b.allow()
    if refused is None:
        b.record_failure("HTTP 503 from process " + sys.argv[2])
    print("REFUSED" if refused else "CALLED")
    """
)
