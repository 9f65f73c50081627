"""Watch patterns: compiled at start, matched with a time limit, batched, rate limited.

- A pattern is at most 200 characters and must compile, or the call fails and nothing starts
  (R-J5). Patterns use Python's `regex` syntax (close to JavaScript's for everyday use).
- What it unrolls to may be at most MAX_UNROLLED items, and it is one line: `regex` unrolls
  counted repeats ({n}, {m,n}, {m,}) when it compiles, so `(?:a{99999}){99999}` (19
  characters) would take the caller's memory and never finish compiling. The size is
  estimated on the text: a repeat multiplies what it repeats (an item, or a group with what
  it holds), and what follows adds to it, so `[0-9a-f]{8}-[0-9a-f]{4}` is 13 and
  `(?:a{100}){100}` 10,000. A line break is refused because a verbose-mode `#` comment ends
  there and could hide part of a repeat from the estimate.
- Only the first 65,536 characters of a line are inspected; longer lines still count once.
- A pathological pattern cannot freeze the supervisor: each match is bounded (50 ms); a line
  whose matching timed out is counted in `timeouts` and treated as not matching, and after
  MAX_TIMEOUTS such lines watching stops for good (`stopped` says why), so a pattern that
  times out on every line costs 150 ms in all, not 50 ms a line.
- Matching lines are batched: a batch is flushed after `debounce_ms` without a new match, or
  at `batch_lines` lines (R-J6). At most `per_min` batches become events in any 60 seconds;
  the lines of the rest are counted in `suppressed` (reported in job_exit). `associative`
  lifts the rate limit; batching still applies (R-J7).

Time is passed in (milliseconds), so tests run on a fake clock.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from specialists.base.errors import UserError

MAX_PATTERN_CHARS = 200
MAX_PATTERNS = 16
LINE_INSPECT_CHARS = 65_536
MATCH_TIMEOUT_S = 0.05
RATE_WINDOW_MS = 60_000
MAX_BATCH_LINE_CHARS = 1_000  # a matched line as shown in an event
MAX_TIMEOUTS = 3  # lines whose matching ran out of time before watching stops
MAX_UNROLLED = 10_000  # items a pattern may unroll to (a{10000} compiles in a few ms)
# An escape (with its braces: \x{41}, \p{L}), a class, a {...}, or any one character.
_ITEM = re.compile(r"\\[xpPNgku]\{[^}]*\}|\\.|\[\^?\]?(?:\\.|[^\]\\])*\]|\{[^{}]*\}|.", re.DOTALL)
_COUNT = re.compile(r"\{([0-9]*)(?:,([0-9]*))?\}")
_VERBOSE_NOISE = re.compile(r"\s+|#.*", re.DOTALL)  # what (?x) ignores inside the braces


def compile_watch(patterns: object) -> list[Any]:
    """The compiled patterns, or one clear error naming the bad one."""
    import regex

    if patterns is None:
        return []
    if not isinstance(patterns, list | tuple) or not all(isinstance(p, str) for p in patterns):
        raise UserError("watch must be a list of pattern strings")
    if len(patterns) > MAX_PATTERNS:
        raise UserError(f"at most {MAX_PATTERNS} watch patterns; got {len(patterns)}")
    compiled = []
    for n, pattern in enumerate(patterns, 1):
        if not pattern:
            raise UserError(f"watch pattern {n} is empty")
        if len(pattern) > MAX_PATTERN_CHARS:
            raise UserError(
                f"watch pattern {n} is {len(pattern)} characters long",
                hint=f"at most {MAX_PATTERN_CHARS}",
            )
        if "\n" in pattern:
            raise UserError(f"watch pattern {n} spans lines", hint="a pattern matches one line")
        if (size := unrolled_size(pattern)) > MAX_UNROLLED:
            raise UserError(
                f"watch pattern {n} {pattern[:60]!r} repeats too much: it unrolls to "
                f"{f'{size:,}' if size < 10**12 else 'over 10**12'} items when compiled",
                hint=f"at most {MAX_UNROLLED:,}; use * or + for long runs",
            )
        try:
            compiled.append(regex.compile(pattern))
        except (regex.error, ValueError, OverflowError, RecursionError) as exc:
            raise UserError(f"watch pattern {n} {pattern[:60]!r} does not compile: {exc}") from None
    return compiled


def unrolled_size(pattern: str) -> int:
    """About how many items compiling `pattern` unrolls its counted repeats to (see the
    module doc); over-counts a little (a group's `?:` counts as items), never under."""
    groups = [[0, 1]]  # per open group: its size so far, and the size of its last item
    for found in _ITEM.finditer(pattern):
        item, top = found.group(), groups[-1]
        count = _COUNT.fullmatch(_VERBOSE_NOISE.sub("", item)) if item[0] == "{" else None
        if item == "(":
            groups.append([0, 1])
        elif item == ")" and len(groups) > 1:
            size = max(groups.pop()[0], 1)
            groups[-1][0] += size
            groups[-1][1] = size
        elif count is not None:
            times = max(int(c or 0) for c in count.groups(default="")) or 1
            top[0] += top[1] * (times - 1)
            top[1] *= times
        else:
            top[0] += 1
            top[1] = 1
        if top[0] > 10**12:
            return top[0]
    return sum(size for size, _ in groups)


@dataclass(frozen=True)
class MatchBatch:
    lines: tuple[str, ...]  # the matched lines, each clipped for display
    first_line: int  # 1-based number of the first matched line in the output
    last_line: int


class WatchBatcher:
    def __init__(
        self,
        patterns: Sequence[Any],
        *,
        debounce_ms: int = 1000,
        batch_lines: int = 20,
        per_min: int = 6,
        associative: bool = False,
    ) -> None:
        self.patterns = list(patterns)
        self.debounce_ms = max(0, debounce_ms)
        self.batch_lines = max(1, batch_lines)
        self.per_min = per_min
        self.associative = associative
        self.lines_seen = 0
        self.matched = 0
        self.suppressed = 0  # matching lines not delivered because of the rate limit
        self.timeouts = 0  # lines whose matching ran out of time
        self.stopped: str | None = None  # why watching stopped early, if it did
        self._batch: list[str] = []
        self._first = 0
        self._last = 0
        self._last_match_ms = 0
        self._sent: deque[int] = deque()  # times of recent match events

    def feed(self, line: str, now_ms: int) -> list[MatchBatch]:
        """One output line (without its newline). Returns batches to send now, if any."""
        self.lines_seen += 1
        if not self.patterns or not self._matches(line[:LINE_INSPECT_CHARS]):
            return []
        self.matched += 1
        if not self._batch:
            self._first = self.lines_seen
        self._batch.append(_clip(line))
        self._last = self.lines_seen
        self._last_match_ms = now_ms
        if len(self._batch) >= self.batch_lines:
            return self._flush(now_ms)
        return []

    def next_due_ms(self) -> int | None:
        """When the open batch is due (quiet for debounce_ms), or None."""
        return self._last_match_ms + self.debounce_ms if self._batch else None

    def due(self, now_ms: int) -> list[MatchBatch]:
        due = self.next_due_ms()
        return self._flush(now_ms) if due is not None and now_ms >= due else []

    def close(self, now_ms: int) -> list[MatchBatch]:
        """The command ended: whatever is batched goes now (still rate limited)."""
        return self._flush(now_ms) if self._batch else []

    def _matches(self, text: str) -> bool:
        for pattern in self.patterns:
            try:
                if pattern.search(text, timeout=MATCH_TIMEOUT_S):
                    return True
            except TimeoutError:
                self.timeouts += 1
                if self.timeouts >= MAX_TIMEOUTS:
                    self.patterns = []
                    self.stopped = (
                        f"watching stopped: {self.timeouts} lines took over "
                        f"{MATCH_TIMEOUT_S * 1000:g} ms to match (a pattern too slow for "
                        "this output)"
                    )
                return False
        return False

    def _flush(self, now_ms: int) -> list[MatchBatch]:
        batch = MatchBatch(tuple(self._batch), self._first, self._last)
        self._batch = []
        if not self.associative:
            while self._sent and now_ms - self._sent[0] >= RATE_WINDOW_MS:
                self._sent.popleft()
            if len(self._sent) >= self.per_min:
                self.suppressed += len(batch.lines)
                return []
            self._sent.append(now_ms)
        return [batch]


def _clip(line: str) -> str:
    return line if len(line) <= MAX_BATCH_LINE_CHARS else line[:MAX_BATCH_LINE_CHARS] + "…"
