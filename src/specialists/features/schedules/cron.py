"""Five-field cron expressions in a named IANA zone, and the next instant one fires.

    minute hour day-of-month month day-of-week      e.g. "30 2 * * 1-5", "*/15 9-17 * * *"

Fields take `*`, numbers, ranges `a-b`, steps `*/n` `a-b/n` `a/n`, lists `a,b`, month names
(jan..dec) and weekday names (sun..sat; 0 and 7 are Sunday), and the macros @hourly @daily
@midnight @weekly @monthly @yearly @annually. As in Vixie cron, when both day fields are
restricted a day matches if either does; otherwise both must.

Wall times are read in the schedule's zone, so DST is answered here, once:
- a wall time in a spring-forward gap (02:30 on the night Berlin goes 02:00 -> 03:00) fires
  at the first instant after the gap (03:00 local); several gap times fire once there;
- a wall time that happens twice in an autumn overlap fires once, at the first of the two.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo

from specialists.base.errors import UserError
from specialists.events.zone import load_zone

HINT = "use 5 fields: minute hour day-of-month month day-of-week, e.g. '30 2 * * 1-5'"
# Far enough for the sparsest expression that fires at all: 29 February may be 8 years away.
HORIZON_DAYS = 366 * 8 + 31
MAX_EXPR = 200
DST_MARGIN_H = 3  # more than any zone's clock change (the largest is 2 hours)
HOUR_MS = 3_600_000
# The instants a calendar can be scanned from: a day past year 1 (no zone is that far off UTC)
# to the horizon before year 9999. Outside them only a damaged state.json or a wrong clock.
FIRST_MS = int(datetime(1, 1, 3, tzinfo=UTC).timestamp() * 1000)
LAST_MS = int(datetime(9990, 1, 1, tzinfo=UTC).timestamp() * 1000)

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_MACROS = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}
# name, lowest, highest, names (index + lowest = value)
_FIELDS = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day-of-month", 1, 31, ()),
    ("month", 1, 12, _MONTHS),
    ("day-of-week", 0, 7, _DAYS),
)


@dataclass(frozen=True)
class CronExpr:
    text: str
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    any_day: bool  # day-of-month was `*`
    any_weekday: bool  # day-of-week was `*`

    def matches_date(self, day: date) -> bool:
        if day.month not in self.months:
            return False
        by_day = day.day in self.days
        by_weekday = (day.isoweekday() % 7) in self.weekdays
        if self.any_day or self.any_weekday:
            return by_day and by_weekday
        return by_day or by_weekday


@functools.lru_cache(maxsize=512)
def parse_cron(text: str) -> CronExpr:
    """The expression, or one UserError naming the field and what was wrong."""
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_EXPR:
        raise UserError(f"invalid cron expression {str(text)[:60]!r}", hint=HINT)
    source = " ".join(text.split())
    expanded = _MACROS.get(source.lower(), source)
    if expanded.startswith("@"):
        raise UserError(f"unknown cron macro {source[:40]!r}", hint="@hourly, @daily, @weekly, ...")
    parts = expanded.split(" ")
    if len(parts) != 5:
        raise UserError(
            f"invalid cron expression {source[:60]!r}: {len(parts)} fields, expected 5", hint=HINT
        )
    values = [_field(part, *spec) for part, spec in zip(parts, _FIELDS, strict=True)]
    weekdays = frozenset(0 if d == 7 else d for d in values[4])  # 7 is Sunday too
    expr = CronExpr(
        text=source,
        minutes=tuple(sorted(values[0])),
        hours=tuple(sorted(values[1])),
        days=frozenset(values[2]),
        months=frozenset(values[3]),
        weekdays=weekdays,
        any_day=parts[2].startswith("*"),
        any_weekday=parts[4].startswith("*"),
    )
    if not any(_possible(expr, month) for month in expr.months):
        raise UserError(f"cron expression {source!r} never fires", hint="check day and month")
    return expr


def _possible(expr: CronExpr, month: int) -> bool:
    longest = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[month - 1]
    if not expr.any_day and not expr.any_weekday:
        return True  # any weekday will do
    return expr.any_day or min(expr.days) <= longest


def _field(part: str, name: str, low: int, high: int, names: tuple[str, ...]) -> set[int]:
    found: set[int] = set()
    for item in part.split(","):
        body, _, step_text = item.partition("/")
        step = 1
        if step_text:
            step = _number(step_text, name, 1, high - low + 1, ())
        if body == "*":
            first, last = low, high
        elif "-" in body:
            a, _, b = body.partition("-")
            first, last = _number(a, name, low, high, names), _number(b, name, low, high, names)
            if first > last:
                raise UserError(f"cron {name} range {body!r} runs backwards", hint=HINT)
        else:
            first = _number(body, name, low, high, names)
            last = high if step_text else first
        found.update(range(first, last + 1, step))
    return found


def _number(text: str, name: str, low: int, high: int, names: tuple[str, ...]) -> int:
    word = text.lower()
    if names and word in names:
        return names.index(word) + low
    if not text.isascii() or not text.isdigit() or len(text) > 4:
        raise UserError(f"invalid cron {name} {text[:20]!r}", hint=HINT)
    value = int(text)
    if not low <= value <= high:
        raise UserError(f"cron {name} {value} is out of range {low}-{high}", hint=HINT)
    return value


def next_fire_ms(expr: CronExpr, zone: str, after_ms: int) -> int:
    """The first instant strictly after `after_ms` at which `expr` fires in `zone`."""
    if not FIRST_MS <= after_ms <= LAST_MS:
        raise UserError(
            f"cron expression {expr.text!r} has no slot after {after_ms} ms: outside the years"
            " 1 to 9989",
            hint="is the clock right? a schedule whose state.json is damaged starts again from"
            " now when paused and resumed",
        )
    tz = load_zone(zone)
    # Wall times before `after`'s own cannot map past it while the offset holds steady
    # around it (no zone changes twice within hours); near a change, look DST_MARGIN_H
    # further back, more than any zone's clock ever moves.
    margin = DST_MARGIN_H * HOUR_MS
    here = _offset(after_ms, tz)
    steady = _offset(after_ms - margin, tz) == here == _offset(after_ms + margin, tz)
    floor = _wall(after_ms, tz) - timedelta(hours=0 if steady else DST_MARGIN_H)
    floor_key = (floor.date(), floor.hour, floor.minute)
    start = floor.date()
    for n in range(HORIZON_DAYS):
        day = start + timedelta(days=n)
        if not expr.matches_date(day):
            continue
        for hour in expr.hours:
            if (day, hour, 59) < floor_key:
                continue
            for minute in expr.minutes:
                if (day, hour, minute) < floor_key:
                    continue
                instant = wall_instant_ms(day, hour, minute, tz)
                if instant > after_ms:
                    return instant
    raise UserError(f"cron expression {expr.text!r} does not fire within {HORIZON_DAYS} days")


def wall_instant_ms(day: date, hour: int, minute: int, tz: tzinfo) -> int:
    """The instant of a wall time: the earlier one in an overlap; after a gap, its end."""
    naive = datetime(day.year, day.month, day.day, hour, minute)
    first = naive.replace(tzinfo=tz, fold=0)
    ms = int(first.timestamp() * 1000)
    if _wall(ms, tz) == naive:
        return ms
    # In a gap: fold=0 lands past it, fold=1 before it; the transition lies between.
    low = int(naive.replace(tzinfo=tz, fold=1).timestamp() * 1000)
    high = ms
    if low > high:
        low, high = high, low
    low_offset = _offset(low, tz)
    while high - low > 1000:  # to the second: zone transitions fall on whole seconds
        mid = (low + high) // 2
        if _offset(mid, tz) == low_offset:
            low = mid
        else:
            high = mid
    return high - high % 1000


def _wall(ms: int, tz: tzinfo) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz).replace(tzinfo=None)


def _offset(ms: int, tz: tzinfo) -> timedelta | None:
    return datetime.fromtimestamp(ms / 1000, UTC).astimezone(tz).utcoffset()
