"""How a job's attention and watchdog are set: defaults, config.toml, the definition, the run.

Each layer overrides the one before it, key by key: the defaults, config.toml's `[attention]`
and `[watchdog]` tables, the definition's `execution.attention` and `execution.watchdog`,
then the run's options (`--attention-after`, `--watchdog`). The result is written into the
launch record (job.json `attention`, `watchdog`) so the supervisor reads one resolved value.

Attention defaults. A quiet agent is noticed after QUIET_AFTER_MS times the thinking level's
factor (a model told to think hard may be silent longer: `high` doubles it); an explicit
`after` is taken as written, never scaled. A tool call open longer than TOOL_OPEN_AFTER_MS
(not scaled: a tool is not the model thinking), and FAILURES_IN_A_ROW failed mutating tool
calls with no success between them. `off` (or 0) turns one trigger off; `attention = "off"`
or `--attention-after off` turns attention off for the job.

The watchdog is off unless asked for. `reviewer` names the specialist that reviews
(default: the builtin `reviewer`), `max_reviews` bounds reviews per job.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from specialists.base.errors import UserError
from specialists.base.tuples import NamedTuple

QUIET_AFTER_MS = 5 * 60_000  # the seed's needsAttentionAfterMs default
TOOL_OPEN_AFTER_MS = 10 * 60_000
FAILURES_IN_A_ROW = 3
# How much longer a model at each thinking level may stay silent before it is noticed.
THINKING_FACTOR = {"off": 1.0, "minimal": 1.0, "low": 1.0, "medium": 1.5, "high": 2.0, "xhigh": 3.0}
MAX_AFTER_MS = 7 * 86_400_000  # a week: a longer threshold is a typo
MAX_FAILURES = 100

DEFAULT_REVIEWER = "reviewer"
DEFAULT_MAX_REVIEWS = 3
MAX_REVIEWS_LIMIT = 50

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)?")
_UNITS = {None: 1, "ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_OFF = ("off", "false", "no", "none", "0")


class AttentionSettings(NamedTuple):
    """A job's attention thresholds; None turns that trigger off."""

    quiet_ms: int | None = QUIET_AFTER_MS
    tool_ms: int | None = TOOL_OPEN_AFTER_MS
    failures: int | None = FAILURES_IN_A_ROW

    @property
    def enabled(self) -> bool:
        return any(v is not None for v in (self.quiet_ms, self.tool_ms, self.failures))

    def to_dict(self) -> dict[str, Any]:
        return {"quiet_ms": self.quiet_ms, "tool_ms": self.tool_ms, "failures": self.failures}

    @classmethod
    def of_record(cls, data: Mapping[str, Any]) -> AttentionSettings:
        """From job.json's `attention`; {} (a job launched before attention): the defaults."""
        if not data:
            return cls()
        return cls(
            quiet_ms=_opt_int(data.get("quiet_ms")),
            tool_ms=_opt_int(data.get("tool_ms")),
            failures=_opt_int(data.get("failures")),
        )


OFF = AttentionSettings(None, None, None)


class WatchdogSettings(NamedTuple):
    enabled: bool = False
    reviewer: str = DEFAULT_REVIEWER
    max_reviews: int = DEFAULT_MAX_REVIEWS
    reviews: str | None = None  # set on a review job: the job it reviews (never watched)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "enabled": self.enabled,
            "reviewer": self.reviewer,
            "max_reviews": self.max_reviews,
        }
        if self.reviews:
            out["reviews"] = self.reviews
        return out

    @classmethod
    def of_record(cls, data: Mapping[str, Any]) -> WatchdogSettings:
        if not data:
            return cls()
        reviews = data.get("reviews")
        return cls(
            # A review job is never watched, whatever its record says (no review of reviews).
            enabled=data.get("enabled") is True and not reviews,
            reviewer=str(data.get("reviewer") or DEFAULT_REVIEWER),
            max_reviews=_opt_int(data.get("max_reviews")) or DEFAULT_MAX_REVIEWS,
            reviews=str(reviews) if reviews else None,
        )


def resolve_attention(
    config: object, definition: object, run_after: str | None, thinking_level: str | None
) -> AttentionSettings:
    """The job's attention from config.toml's table, the definition's value and the run's
    `--attention-after`. Raises UserError naming the field for a bad value."""
    factor = THINKING_FACTOR.get(thinking_level or "off", 1.0)
    quiet: int | None = int(QUIET_AFTER_MS * factor)
    tool: int | None = TOOL_OPEN_AFTER_MS
    failures: int | None = FAILURES_IN_A_ROW
    for layer, where in ((config, "config.toml [attention]"), (definition, "execution.attention")):
        if layer is None:
            continue
        if _is_off(layer):
            quiet = tool = failures = None
            continue
        if not isinstance(layer, Mapping):
            raise UserError(f"{where}: expected a table or off, got {type(layer).__name__}")
        unknown = set(layer) - {"after", "tool_after", "toolAfter", "failures", "enabled"}
        if unknown:
            raise UserError(
                f"{where}: unknown key {sorted(unknown)[0]!r}",
                hint="keys: after, tool_after, failures, enabled",
            )
        if "enabled" in layer and not isinstance(layer["enabled"], bool):
            raise UserError(f"{where}.enabled: expected true or false")
        if layer.get("enabled") is False:
            quiet = tool = failures = None
            continue
        if "after" in layer:
            quiet = parse_after(layer["after"], f"{where}.after")
        tool_value = layer.get("tool_after", layer.get("toolAfter"))
        if tool_value is not None:
            tool = parse_after(tool_value, f"{where}.tool_after")
        if "failures" in layer:
            failures = _parse_failures(layer["failures"], f"{where}.failures")
    if run_after is not None:
        if _is_off(run_after):
            return OFF
        quiet = parse_after(run_after, "--attention-after")
    return AttentionSettings(quiet, tool, failures)


def resolve_watchdog(
    config: object, definition: object, run_choice: bool | None
) -> WatchdogSettings:
    """The job's watchdog from config.toml's `[watchdog]`, the definition's
    `execution.watchdog` (true, false or a table) and the run's `--watchdog/--no-watchdog`."""
    enabled, reviewer, budget = False, DEFAULT_REVIEWER, DEFAULT_MAX_REVIEWS
    for layer, where in ((config, "config.toml [watchdog]"), (definition, "execution.watchdog")):
        if layer is None:
            continue
        if isinstance(layer, bool):
            enabled = layer
            continue
        if not isinstance(layer, Mapping):
            raise UserError(f"{where}: expected true, false or a table")
        unknown = set(layer) - {"enabled", "reviewer", "max_reviews", "maxReviews"}
        if unknown:
            raise UserError(
                f"{where}: unknown key {sorted(unknown)[0]!r}",
                hint="keys: enabled, reviewer, max_reviews",
            )
        if "enabled" in layer:
            if not isinstance(layer["enabled"], bool):
                raise UserError(f"{where}.enabled: expected true or false")
            enabled = layer["enabled"]
        if "reviewer" in layer:
            name = layer["reviewer"]
            if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
                raise UserError(f"{where}.reviewer: expected a specialist name, got {name!r}")
            reviewer = name
        count = layer.get("max_reviews", layer.get("maxReviews"))
        if count is not None:
            if type(count) is not int or not 1 <= count <= MAX_REVIEWS_LIMIT:
                raise UserError(f"{where}.max_reviews: expected 1 to {MAX_REVIEWS_LIMIT}")
            budget = count
    if run_choice is not None:
        enabled = run_choice
    return WatchdogSettings(enabled, reviewer, budget)


def parse_after(value: object, where: str) -> int | None:
    """A threshold: 500ms, 30s, 5m, 1h, 1d, a bare whole number of milliseconds; off or 0
    turns it off."""
    if _is_off(value):
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise UserError(f"{where}: expected a duration such as 5m, or off")
    ms: int | float
    if isinstance(value, int):
        ms = value
    else:
        match = _DURATION.fullmatch(value.strip())
        if not match:
            raise UserError(
                f"{where}: invalid duration {value[:40]!r}", hint="use 30s, 5m, 1h or off"
            )
        # compared before int(): four hundred nines are an infinite float, not a number
        ms = float(match.group(1)) * _UNITS[match.group(2)]
    shown = repr(value[:40]) if isinstance(value, str) else str(value)[:40]
    if ms < 1000:
        raise UserError(f"{where}: {shown} is under a second", hint="use 30s, 5m, 1h or off")
    if ms > MAX_AFTER_MS:
        raise UserError(f"{where}: {shown} is longer than a week", hint="use 30s, 5m, 1h or off")
    return int(ms)


def _parse_failures(value: object, where: str) -> int | None:
    if _is_off(value):
        return None
    if type(value) is not int or not 1 <= value <= MAX_FAILURES:
        raise UserError(f"{where}: expected a whole number from 1 to {MAX_FAILURES}, or off")
    return value


def _is_off(value: object) -> bool:
    if value is False or (type(value) is int and value == 0):
        return True
    return isinstance(value, str) and value.strip().lower() in _OFF


def _opt_int(value: object) -> int | None:
    return value if type(value) is int and value > 0 else None
