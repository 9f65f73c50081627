"""One job's events.jsonl, followed by byte offset.

The first read starts near the end of a large file (the view shows the tail, not a job's
whole history); each later poll reads only the bytes appended since. A trailing partial line
is left for the next poll. A file that shrank (replaced) is read again from its tail.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from specialists.jobs.lines import clip, event_detail, feed_name
from specialists.jobs.store import read_event_lines

TAIL_BYTES = 256 * 1024  # where the first read starts, from the end
MAX_POLL_BYTES = 8 * 1024 * 1024  # more than this appended at once: skip to the tail
TERMINAL_EVENTS = frozenset({"done", "error", "cancelled"})


class FeedTail:
    def __init__(self, path: Path, *, tail_bytes: int = TAIL_BYTES) -> None:
        self.path = path
        self.offset: int | None = None  # None until the first poll places it
        self._tail_bytes = tail_bytes
        self.skipped = False  # the first poll (or a flood) skipped older events

    def poll(self) -> list[dict[str, Any]]:
        """Whole events appended since the last poll (the tail of the file on the first)."""
        try:
            size = os.stat(self.path).st_size
        except OSError:
            return []  # not written yet, or removed by gc: nothing new to show
        if self.offset is None or size < self.offset or size - self.offset > MAX_POLL_BYTES:
            self.offset = self._start(size)
        if size == self.offset:
            return []
        events, self.offset = read_event_lines(self.path, self.offset)
        return events

    def _start(self, size: int) -> int:
        """Where to begin: 0, or the first line boundary within the last `tail_bytes`."""
        if size <= self._tail_bytes:
            return 0
        self.skipped = True
        start = size - self._tail_bytes
        try:
            with open(self.path, "rb") as f:
                f.seek(start - 1)
                chunk = f.read(self._tail_bytes)
        except OSError:
            return size
        newline = chunk.find(b"\n")
        return size if newline < 0 else start + newline


def ended(events: list[dict[str, Any]]) -> bool:
    """True when the batch holds a job's final event."""
    return any(ev.get("event") in TERMINAL_EVENTS for ev in events)


def feed_parts(ev: dict[str, Any], started_ms: int) -> tuple[str, str, str]:
    """(clock since the job started, event name, detail) for one event line."""
    ts = ev.get("ts")
    offset = (int(ts) - started_ms) // 1000 if isinstance(ts, int) and started_ms else 0
    offset = max(0, offset)
    clock = f"{offset // 60:02d}:{offset % 60:02d}"
    try:
        detail = event_detail(ev)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        detail = f"(malformed event: {type(exc).__name__})"  # a damaged line stays visible
    return clock, clip(feed_name(ev), 11), detail
