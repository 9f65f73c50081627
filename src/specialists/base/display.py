"""Text for people and models: one-line clipping, durations, and agent text made safe to show.

Every interface (CLI, MCP server, hooks) shows job text through these, so a job reads the
same everywhere. Nothing imported but the built-in `time`: the hooks use it on every prompt.

Agent output is untrusted: an answer or an error line can carry terminal escape sequences
(set the title, move the cursor, hide text). `for_terminal` makes them visible instead of
obeying them. It is for display only: `result --raw` and files keep the exact bytes.
"""

from __future__ import annotations

import time

ELLIPSIS = "…"


def one_line(text: object, limit: int) -> str:
    """`text` as a single line of at most `limit` characters (whitespace runs become one
    space, newlines included); a longer one ends with an ellipsis."""
    flat = " ".join(str(text if text is not None else "").split())
    return flat if len(flat) <= limit else flat[: max(0, limit - 1)] + ELLIPSIS


def first_line(text: object, limit: int) -> str:
    """The first line of `text` that is not blank, as `one_line` (a task's title)."""
    for line in str(text if text is not None else "").splitlines():
        if line.strip():
            return one_line(line, limit)
    return ""


def excerpt(text: str, limit: int) -> str:
    """At most about `limit` characters of `text`: its head and its tail around an ellipsis
    when it is longer (a tool says what went wrong at the start or, in a trace, at the end)."""
    if len(text) <= limit:
        return text
    tail = limit // 3
    return text[: limit - tail - 3].rstrip() + f" {ELLIPSIS} " + text[-tail:].lstrip()


def duration(seconds: float | int | None) -> str:
    """0m07s, 1m47s as in the seed's banners; from an hour on 1h02m."""
    total = max(0, round(seconds or 0))
    if total >= 3600:
        return f"{total // 3600}h{total % 3600 // 60:02d}m"
    return f"{total // 60}m{total % 60:02d}s"


def clock_time(at_ms: int, now_ms: int) -> str:
    """`14:05`, or `Dec 3 14:05` when not today (the machine's own time zone)."""
    at, now = time.localtime(at_ms / 1000), time.localtime(now_ms / 1000)
    clock = "%H:%M:%S" if at.tm_sec else "%H:%M"
    today = (at.tm_year, at.tm_yday) == (now.tm_year, now.tm_yday)
    return time.strftime(clock if today else f"%b %d {clock}", at)


def _control_table() -> dict[int, str]:
    """C0 controls, DEL and C1 controls -> a visible escape; newline and tab are kept."""
    table = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))}
    del table[0x0A], table[0x09]
    table[0x1B] = "\\e"  # the one that starts every escape sequence: say so plainly
    return table


_CONTROLS = _control_table()


def for_terminal(text: str, *, keep_newlines: bool = True) -> str:
    """Agent text safe to print on a terminal: control characters (ESC, BEL, backspace,
    carriage return, C1 controls) become visible escapes such as `\\e[31m`. With
    keep_newlines=False newlines and tabs are escaped too."""
    out = text.translate(_CONTROLS)
    if not keep_newlines:
        out = out.replace("\n", "\\n").replace("\t", "\\t")
    try:
        out.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates (undecodable bytes) would fail the write
        out = out.encode("utf-8", "backslashreplace").decode("utf-8")
    return out


def display_line(text: object, limit: int) -> str:
    """`one_line` of text safe for a terminal: what status, feed and banners print."""
    return one_line(for_terminal(str(text if text is not None else "")), limit)
