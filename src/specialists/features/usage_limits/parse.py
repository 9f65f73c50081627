"""The usage limit a line of agent output reports, with its reset time (pure).

Every runner's failure ends as one line of text (a `RunFinished` error), so one reader serves
them all (the native loop's 429 is said as such a line: base/usage_limit.py `describe`). What
is recognised (tests/unit/test_usage_limit.py has a line of each):
- Claude Code: `Claude AI usage limit reached|<epoch seconds>` (its older result text),
  `5-hour limit reached ∙ resets 3pm`, `... limit will reset at 3pm (Europe/Berlin)`;
- Codex: `You've hit your usage limit. ... try again in 2 hours 5 minutes.` or
  `... Try again at 3:05 PM.`;
- pi and any provider error: a limit phrase (usage limit, rate limit, quota, HTTP 429)
  with a hint `retry after 30s`, `try again in 2h`, `resets at <ISO time>`.

No reset time, no pause: a limit whose end is unknown stays an error (retrying blind could
spin on an account that is simply out of credit).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, tzinfo

from specialists.base.tuples import NamedTuple
from specialists.base.usage_limit import SECONDS, iso_ms

MAX_AHEAD_MS = 8 * 24 * 3600 * 1000  # a reset further away than this is not believed


class UsageLimit(NamedTuple):
    resets_at_ms: int  # wall clock, milliseconds since the epoch
    why: str  # the line it was read from (clipped), for people


_LIMIT = re.compile(
    r"usage limit|rate.?limit|limit reached|hit your (usage )?limit|quota|too many requests"
    r"|\b429\b|ratelimit",
    re.IGNORECASE,
)
_EPOCH_BAR = re.compile(r"limit reached\|(\d{9,11})\b", re.IGNORECASE)
_ISO = re.compile(
    r"(?:resets?|reset at|until|try again at)\s*:?\s*(?:at\s+)?"
    r"(\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d))",
    re.IGNORECASE,
)
_CLOCK = re.compile(
    r"(?:resets?|reset at|try again at)\s+(?:at\s+)?(\d{1,2})(?::(\d\d))?\s*([ap]\.?m\.?)?"
    r"(?:\s*\(([A-Za-z_]+(?:/[A-Za-z_+-]+)*)\))?",
    re.IGNORECASE,
)
_AFTER = re.compile(
    r"(?:try again in|retry (?:after|in)|resets? in|wait)\s+"
    r"((?:\d+(?:\.\d+)?\s*[a-z]+[\s,]*(?:and\s+)?)+)",
    re.IGNORECASE,
)
_JSON_AT = re.compile(r'"resets_at"\s*:\s*(\d{9,11})\b')
_JSON_IN = re.compile(r'"resets_in_seconds"\s*:\s*(\d+)\b')
_DATE = re.compile(
    r"(?:try again at|resets?(?: at| on)?)\s+([A-Z][a-z]{2})[a-z]*\.? (\d{1,2})(?:st|nd|rd|th)?,?"
    r"(?: (\d{4}),?)? (\d{1,2}):(\d\d) ?([AP]M)?",
    re.IGNORECASE,
)
_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
_UNIT = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]+)", re.IGNORECASE)


def from_text(text: str | None, now_ms: int, zone: tzinfo | None = None) -> UsageLimit | None:
    """The limit a line of agent output reports, or None (no limit, or no reset time).
    `zone`: where a bare clock time (`resets 3pm`) is read; the machine's own by default."""
    if not text or not _LIMIT.search(text):
        return None
    line = " ".join(text.split())[:300]
    at = _reset_in(text, now_ms, zone)
    if at is None or not now_ms - 60_000 <= at <= now_ms + MAX_AHEAD_MS:
        return None
    return UsageLimit(max(at, now_ms), line)


def _reset_in(text: str, now_ms: int, zone: tzinfo | None) -> int | None:
    if m := _EPOCH_BAR.search(text):
        return int(m.group(1)) * 1000
    if m := _JSON_AT.search(text):
        return int(m.group(1)) * 1000
    if m := _JSON_IN.search(text):
        return now_ms + int(m.group(1)) * 1000
    if m := _ISO.search(text):
        return iso_ms(m.group(1))
    if m := _AFTER.search(text):
        seconds = _words_seconds(m.group(1))
        return None if seconds is None else now_ms + int(seconds * 1000)
    # A clock time is shown to the minute (Codex's `3:32 AM` for 03:32:40): its minute's
    # end, so that the job never resumes into the same limit.
    if m := _DATE.search(text):
        at = _dated(m, now_ms, zone)
        return None if at is None else at + 60_000
    if m := _CLOCK.search(text):
        at = _next_clock(m, now_ms, zone)
        return None if at is None else at + 60_000
    return None


def _dated(m: re.Match[str], now_ms: int, zone: tzinfo | None) -> int | None:
    """`Jul 5th, 2026 8:19 PM` (Codex): a date and a clock time, the year this one if absent."""
    month = m.group(1).lower()
    if month not in _MONTHS:
        return None
    hour, minute = _hour24(int(m.group(4)), m.group(6)), int(m.group(5))
    now = _local(now_ms, zone)
    if hour is None:
        return None
    try:
        at = now.replace(
            year=int(m.group(3) or now.year), month=_MONTHS.index(month) + 1,
            day=int(m.group(2)), hour=hour, minute=minute, second=0, microsecond=0,
        )  # fmt: skip
    except ValueError:
        return None
    return int(at.timestamp() * 1000)


def _words_seconds(text: str) -> float | None:
    """`2 hours 5 minutes`, `3h 12m`, `30s`, `1.5 seconds` -> seconds."""
    total, found = 0.0, False
    for number, unit in _UNIT.findall(text):
        scale = SECONDS.get(unit.lower())
        if scale is None:
            break  # the duration ended ("2 hours or upgrade ...")
        total, found = total + float(number) * scale, True
    return total if found else None


def _next_clock(m: re.Match[str], now_ms: int, zone: tzinfo | None) -> int | None:
    """The next time the clock shows `3pm` / `15:05` (in the named zone, if one is given)."""
    hour, minute = _hour24(int(m.group(1)), m.group(3)), int(m.group(2) or 0)
    if hour is None or minute > 59 or not (m.group(2) or m.group(3)):
        return None  # a bare number ("resets 5") is not a time
    if m.group(4):
        try:
            from zoneinfo import ZoneInfo

            zone = ZoneInfo(m.group(4))
        except (ValueError, OSError, KeyError):
            pass  # an unknown zone: the machine's own
    now = _local(now_ms, zone)
    at = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if at <= now - timedelta(minutes=2):  # a clock time shown to the minute: just past is now
        at += timedelta(days=1)
    return int(at.timestamp() * 1000)


def _hour24(hour: int, meridiem: str | None) -> int | None:
    """`3` `pm` -> 15; a 24-hour clock's hour as it is; None when it is no hour."""
    half = (meridiem or "").lower().replace(".", "")
    if half:
        return hour % 12 + (12 if half == "pm" else 0) if 1 <= hour <= 12 else None
    return hour if hour <= 23 else None


def _local(now_ms: int, zone: tzinfo | None) -> datetime:
    return datetime.fromtimestamp(now_ms / 1000, zone or datetime.now().astimezone().tzinfo)
