"""Wall-clock targets in an IANA zone -> instants (R-T6).

A local time that does not exist (the spring-forward gap) moves forward by the gap; one that
exists twice (the autumn overlap) means the earlier instant. Dates are YYYY-MM-DD with
four-digit years in astronomical numbering: year 0000 exists, is long past, and so fires at
once (Python's datetime starts at year 1, so such dates are answered without it).
"""

from __future__ import annotations

import re
from datetime import datetime, tzinfo

from specialists.base.errors import UserError

_DATE_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_TIME_RE = re.compile(r"(\d{2}):(\d{2})(?::(\d{2}))?")
_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def load_zone(name: str) -> tzinfo:
    """A tzinfo for `name`, or one clear error (unknown zone, path-like names refused)."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    if not isinstance(name, str) or not name or len(name) > 64 or name.startswith("/"):
        raise UserError(
            f"invalid time zone {str(name)[:64]!r}", hint="use an IANA name such as Europe/Berlin"
        )
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise UserError(
            f"unknown time zone {name!r}", hint="use an IANA name such as Europe/Berlin or UTC"
        ) from exc


def wall_time_to_epoch(date: str, time: str, zone: str) -> float:
    """Seconds since the epoch of `date` `time` in `zone` (gap: forward; overlap: earlier)."""
    m = _DATE_RE.fullmatch(date.strip()) if isinstance(date, str) else None
    if m is None:
        raise UserError(f"invalid date {str(date)[:40]!r}", hint="use YYYY-MM-DD")
    year, month, day = (int(g) for g in m.groups())
    if (
        not 1 <= month <= 12
        or not 1 <= day <= _DAYS[month - 1]
        or (month == 2 and day == 29 and not _is_leap(year))
    ):
        raise UserError(f"invalid date {date!r}: no such day")
    t = _TIME_RE.fullmatch(time.strip()) if isinstance(time, str) else None
    if t is None:
        raise UserError(f"invalid time {str(time)[:40]!r}", hint="use HH:MM or HH:MM:SS")
    hour, minute, second = int(t.group(1)), int(t.group(2)), int(t.group(3) or 0)
    if hour > 23 or minute > 59 or second > 59:
        raise UserError(f"invalid time {time!r}: out of range")
    tz = load_zone(zone)
    if year == 0:
        return float("-inf")  # before any instant we could be asked to wait for
    naive = datetime(year, month, day, hour, minute, second)
    # fold=0: in an overlap, the earlier of the two instants. In a gap, the offset from
    # before the transition applies, which lands the instant after the gap: forward.
    return naive.replace(tzinfo=tz, fold=0).timestamp()
