"""Guards every front applies to an agent's tool calls (seed 001 sections 5.2 and 5.4).

- The bash guard (R-B1..R-B5, toolset/bash_guard.py) spots commands that would block the
  turn (long sleeps, followers, watch loops, dev servers, attached `docker compose up`,
  endless loops), looking through wrappers (`bash -c`, `env`, `timeout`, `nohup`, `xargs`,
  ...) and into interpreters' code (`python -c`), and says to use `bg_run` or `sleep`.
- The oversized-result guard (R-O1..R-O3) spills any tool result over the limit, except
  `read`'s own output, and hands back head, tail and the path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from specialists.events.spill import SpillLimits, bound_body

GuardMode = Literal["block", "warn", "off"]
GUARD_MODES: tuple[str, ...] = ("block", "warn", "off")
DEFAULT_BASH_TIMEOUT_S = 180
RESULT_LIMITS = SpillLimits(max_chars=40_000, head_chars=6_000, tail_chars=2_000)


def guard_result(
    tool: str, text: str, spill_dir: Path, *, limits: SpillLimits = RESULT_LIMITS
) -> str:
    """R-O1..R-O3: a tool result over the limit becomes head + path + tail (`read` exempt)."""
    if tool == "read":
        return text
    return bound_body(text, spill_dir, f"{tool}-result", limits)
