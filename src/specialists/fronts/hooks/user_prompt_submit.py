"""UserPromptSubmit: the session's pending events, with the prompt that follows them.

    [specialists event] notice from run (a1b2c3d4)
    original_args: {"specialist":"overthinker"}
    ---
    Specialist 'overthinker' completed (job a1b2c3d4, 1m47s). Run: specialists result a1b2c3d4
    (MCP tool: result)            <- on the same line, cut here to fit this page

Every event addressed to this session (notices of jobs it started, timers it set, background
commands it ran) reaches the model here if no PostToolUse or Stop hook delivered it earlier:
each once, at most MAX_EVENTS per prompt (the rest come with the next one), and only this
session's (hooks/delivery.py). When there is nothing to say the hook prints nothing at all.
"""

from __future__ import annotations

from specialists.fronts.hooks.common import hook_reply, reader_keys
from specialists.fronts.hooks.delivery import deliver

# `typing` costs ~5 ms to import; annotations are strings here, so only type checkers need it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

EVENT = "UserPromptSubmit"


def run(data: dict[str, Any], state_dir: str, out: TextIO) -> None:
    def write(text: str) -> None:
        out.write(hook_reply(EVENT, text) + "\n")
        out.flush()

    deliver(state_dir, reader_keys(data), write, event="user-prompt-submit")
