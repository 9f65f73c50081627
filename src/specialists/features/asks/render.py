"""Asks for people and models: one header line per ask, then its message."""

from __future__ import annotations

import time

from specialists.base.display import display_line, for_terminal
from specialists.features.asks.ops import AskRow

MAX_SHOWN_CHARS = 4000  # a listing shows this much of a message; the file keeps it whole


def ask_lines(row: AskRow, *, full: bool) -> str:
    a = row.ask
    when = time.strftime("%H:%M:%S", time.localtime(a.asked_at_ms / 1000))
    head = f"{a.id}  {row.state:<15} {a.kind:<17} job {a.job_id}  {when}"
    if a.waits and row.state == "open":
        head += f"  waits up to {a.timeout_s:g} s"
    if not full:
        return head + "  " + display_line(a.message, 80)
    message = for_terminal(a.message)  # the child's text: no escape reaches the terminal
    if len(message) > MAX_SHOWN_CHARS:
        message = message[:MAX_SHOWN_CHARS] + f"\n… ({len(a.message):,} characters in all)"
    lines = [head, message]
    if row.outcome is not None and row.outcome.kind == "reply":
        lines.append(f"reply ({row.outcome.by}): {display_line(row.outcome.answer, 300)}")
    elif row.outcome is not None:
        lines.append(row.outcome.describe())
    return "\n".join(lines)
