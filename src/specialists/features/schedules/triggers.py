"""When a schedule fires: once (`at`), at a fixed interval (`every`), or by cron in a zone.

    at:    "+30m", "+2h", "+1d", or an ISO time with its zone: "2026-12-01T15:00+01:00",
           "2026-12-01T15:00Z", or "2026-12-01T15:00" with a named zone
    every: "15m", "6h", "1d", "2w": a fixed elapsed interval from its anchor (the creation
           time); for "every day at 09:00 local" use cron, which follows the wall clock
    cron:  five fields in a named IANA zone (schedules/cron.py), DST-correct

Every trigger answers one question, `next_after(ms)`: the first slot strictly after an
instant, or None when it never fires again. Slots are what a firing is named by, so the
same slot can never be fired twice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, assert_never

from specialists.base.errors import UserError
from specialists.events.zone import load_zone, wall_time_to_epoch
from specialists.features.schedules.cron import next_fire_ms, parse_cron
from specialists.store.fields import is_int

_SPAN = re.compile(r"(\d{1,6})([mhdw])")
_UNIT_MS = {"m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
MIN_EVERY_MS = 60_000  # a minute: `run-due` from cron cannot fire finer than that anyway
MAX_SPAN_MS = 366 * 86_400_000
_ISO_NAIVE = re.compile(r"(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2})?)")


@dataclass(frozen=True)
class AtTrigger:
    kind: Literal["at"]
    at_ms: int
    text: str  # as written, for people

    def next_after(self, after_ms: int) -> int | None:
        return self.at_ms if self.at_ms > after_ms else None


@dataclass(frozen=True)
class EveryTrigger:
    kind: Literal["every"]
    interval_ms: int
    anchor_ms: int
    text: str

    def next_after(self, after_ms: int) -> int | None:
        if after_ms < self.anchor_ms:
            return self.anchor_ms + self.interval_ms
        steps = (after_ms - self.anchor_ms) // self.interval_ms + 1
        return self.anchor_ms + steps * self.interval_ms


@dataclass(frozen=True)
class CronTrigger:
    kind: Literal["cron"]
    expr: str
    zone: str

    def next_after(self, after_ms: int) -> int | None:
        return next_fire_ms(parse_cron(self.expr), self.zone, after_ms)


Trigger = AtTrigger | EveryTrigger | CronTrigger
HINT = "give exactly one of --at, --every, --cron"


def parse_trigger(
    *, at: str | None, every: str | None, cron: str | None, zone: str | None, now_ms: int
) -> Trigger:
    """One trigger from what a person wrote; refuses none, two, or a malformed one."""
    given = [name for name, value in (("at", at), ("every", every), ("cron", cron)) if value]
    if len(given) != 1:
        what = "no trigger" if not given else f"two triggers ({' and '.join(given)})"
        raise UserError(f"a schedule needs exactly one trigger, got {what}", hint=HINT)
    if zone is not None:
        load_zone(zone)
    if at:
        return AtTrigger("at", parse_at(at, zone, now_ms), at.strip())
    if every:
        if zone is not None:
            raise UserError("--zone is for --at and --cron", hint="every is a fixed interval")
        return EveryTrigger("every", parse_every(every), now_ms, every.strip())
    assert cron is not None
    if zone is None:
        raise UserError(
            "a cron schedule needs a named time zone",
            hint="add --zone, e.g. --zone Europe/Berlin or --zone UTC",
        )
    expr = parse_cron(cron)
    return CronTrigger("cron", expr.text, zone)


def parse_every(text: str) -> int:
    span = _span_ms(text, "every")
    if span < MIN_EVERY_MS:
        raise UserError(f"every {text!r} is shorter than a minute", hint="use 1m or more")
    return span


def parse_at(text: str, zone: str | None, now_ms: int) -> int:
    text = text.strip()
    if text.startswith("+"):
        if zone is not None:
            raise UserError(f"at {text!r} is relative; --zone is for an ISO time")
        return now_ms + _span_ms(text[1:], "at")
    naive = _ISO_NAIVE.fullmatch(text)
    if naive:
        if zone is None:
            raise UserError(
                f"at {text!r} has no time zone",
                hint="add an offset (+01:00, Z) or --zone Europe/Berlin",
            )
        return int(wall_time_to_epoch(naive.group(1), naive.group(2), zone) * 1000)
    try:
        moment = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise UserError(
            f"invalid at {text[:60]!r}",
            hint="use +30m, +2h, or an ISO time with a zone: 2026-12-01T15:00+01:00",
        )
    if zone is not None:
        raise UserError(f"at {text!r} has an offset already; drop --zone")
    return int(moment.timestamp() * 1000)


def _span_ms(text: str, what: str) -> int:
    match = _SPAN.fullmatch(text.strip())
    if not match:
        raise UserError(
            f"invalid {what} {text[:40]!r}", hint="a whole number and m, h, d or w: 30m, 6h, 1d"
        )
    span = int(match.group(1)) * _UNIT_MS[match.group(2)]
    if span <= 0 or span > MAX_SPAN_MS:
        raise UserError(f"invalid {what} {text!r}: between 1m and 366d")
    return span


def trigger_to_dict(trigger: Trigger) -> dict[str, Any]:
    if trigger.kind == "at":
        return {"kind": "at", "at_ms": trigger.at_ms, "text": trigger.text}
    if trigger.kind == "every":
        return {
            "kind": "every",
            "interval_ms": trigger.interval_ms,
            "anchor_ms": trigger.anchor_ms,
            "text": trigger.text,
        }
    if trigger.kind == "cron":
        return {"kind": "cron", "expr": trigger.expr, "zone": trigger.zone}
    assert_never(trigger)


def trigger_from_dict(data: object) -> Trigger:
    """Read back what `trigger_to_dict` wrote; UserError for anything else."""
    if not isinstance(data, dict):
        raise UserError("the trigger is not an object")
    kind = data.get("kind")
    if kind == "at" and _is_int(data.get("at_ms")):
        return AtTrigger("at", data["at_ms"], str(data.get("text", "")))
    if kind == "every" and _is_int(data.get("interval_ms")) and _is_int(data.get("anchor_ms")):
        if not MIN_EVERY_MS <= data["interval_ms"] <= MAX_SPAN_MS:
            raise UserError("the interval is not between a minute and 366 days")
        return EveryTrigger("every", data["interval_ms"], data["anchor_ms"], str(data.get("text")))
    if kind == "cron" and isinstance(data.get("expr"), str) and isinstance(data.get("zone"), str):
        load_zone(data["zone"])
        return CronTrigger("cron", parse_cron(data["expr"]).text, data["zone"])
    raise UserError(f"unknown or malformed trigger {str(kind)[:20]!r}")


def describe(trigger: Trigger) -> str:
    if trigger.kind == "at":
        return f"at {trigger.text}"
    if trigger.kind == "every":
        return f"every {trigger.text}"
    if trigger.kind == "cron":
        return f"cron '{trigger.expr}' {trigger.zone}"
    assert_never(trigger)


def _is_int(value: object) -> bool:
    return is_int(value)  # bounded: a number no calendar holds is damage, not a time
