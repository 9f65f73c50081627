"""A provider's usage or rate limit: its reset time read from a 429's headers, the one line
the native loop fails a run with (`describe`); pure. A reset shown on a clock is
`base/display.clock_time`.

A job that meets a limit pauses until the reset instead of failing (docs/usage-limits.md;
features/usage_limits). Every runner's failure ends as one line of text, read there
(`parse.from_text`); the native loop, which sees the HTTP response itself, turns the reset
headers into that line first (`from_headers`, then `describe`): `retry-after` (seconds or an
HTTP date), `retry-after-ms`, `anthropic-ratelimit-*-reset` (RFC 3339),
`anthropic-ratelimit-unified-reset` (epoch seconds), `x-ratelimit-reset-*` (`1s`, `6m0s`,
`1h2m3.5s`, `20ms`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime

SECONDS = {
    "ms": 0.001, "millisecond": 0.001, "milliseconds": 0.001,
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
}  # fmt: skip
_GO_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)(ms|h|m|s))+$")


def iso_ms(text: str) -> int | None:
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return int(when.timestamp() * 1000) if when.tzinfo else None


def from_headers(headers: Mapping[str, str], now_ms: int) -> int | None:
    """When a 429's limit resets, from its response headers (names in lower case), or None.
    The latest reset among the exhausted limits (remaining 0), else the latest named."""
    import email.utils  # only here: the views import this module for `clock_time`

    found: list[int] = []
    exhausted: list[int] = []
    if (ms := _number(headers.get("retry-after-ms"))) is not None:
        found.append(now_ms + int(ms))
    elif (value := headers.get("retry-after")) is not None:
        seconds = _number(value)
        if seconds is not None:
            found.append(now_ms + int(seconds * 1000))
        else:
            try:
                found.append(int(email.utils.parsedate_to_datetime(value).timestamp() * 1000))
            except (TypeError, ValueError, IndexError):
                pass  # neither seconds nor a date: not a reset
    for name, value in headers.items():
        if not name.endswith("-reset") and "-reset-" not in name:
            continue
        at = _header_reset(name, value, now_ms)
        if at is None:
            continue
        found.append(at)
        remaining = name.replace("-reset", "-remaining", 1)
        if _number(headers.get(remaining)) == 0:
            exhausted.append(at)
    pick = exhausted or found
    return max(pick) if pick else None


def _header_reset(name: str, value: str, now_ms: int) -> int | None:
    value = value.strip()
    if name.startswith("anthropic-ratelimit-"):
        if (n := _number(value)) is not None and n > 1e9:  # unified: epoch seconds
            return int(n * 1000)
        return iso_ms(value)
    if name.startswith("x-ratelimit-reset"):
        if _GO_DURATION.match(value):
            seconds = sum(
                float(n) * SECONDS[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", value)
            )
            return now_ms + int(seconds * 1000)
        if (n := _number(value)) is not None:  # seconds, or (some gateways) an epoch
            return int(n * 1000) if n > 1e9 else now_ms + int(n * 1000)
    return None


def _number(value: object) -> float | None:
    try:
        n = float(str(value).strip())
    except ValueError:
        return None
    return n if math.isfinite(n) and n >= 0 else None


def describe(provider: str, resets_at_ms: int) -> str:
    """The one line the native loop fails a run with: `from_text` reads it back."""
    at = datetime.fromtimestamp(resets_at_ms / 1000, UTC).isoformat(timespec="seconds")
    return f"{provider}: usage limit reached (HTTP 429); resets at {at.replace('+00:00', 'Z')}"
