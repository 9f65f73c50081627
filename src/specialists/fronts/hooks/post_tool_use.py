"""PostToolUse: the session's events mid-turn, and the oversized-result guard.

After every tool call (registered without a matcher) the session's pending events are
delivered as `additionalContext`, so a job that ended or a timer that fired reaches the model
before its next step, not only at the next prompt (hooks/delivery.py). For MCP tools and Bash
a result over overflow.maxChars is replaced by head, path and tail (`updatedToolOutput`;
hooks/guarding.py says which tools Claude Code lets a hook change). A tool call also ends a
run of Stop-hook wake-ups without tools in between (hooks/stop.py counts those).
"""

from __future__ import annotations

import os

from specialists.events.owners import OWNERS_DIR
from specialists.fronts.hooks.common import log, reader_keys, write_reply
from specialists.fronts.hooks.delivery import deliver
from specialists.fronts.hooks.guarding import DEFAULT_MAX_CHARS, has_config, response_chars
from specialists.fronts.hooks.stop import note_tool_use

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

EVENT = "PostToolUse"


def run(data: dict[str, Any], state_dir: str, out: TextIO) -> None:
    keys = reader_keys(data)
    updated = _guarded(data, state_dir, keys)
    note_tool_use(state_dir, keys)

    def write(text: str | None) -> None:
        inner: dict[str, Any] = {"hookEventName": EVENT}
        if text:
            inner["additionalContext"] = text
        if updated is not None:
            inner["updatedToolOutput"] = updated
        write_reply(out, {"hookSpecificOutput": inner})

    if not deliver(state_dir, keys, write, event="post-tool-use") and updated is not None:
        write(None)


def _guarded(data: dict[str, Any], state_dir: str, keys: tuple[str, ...]) -> object | None:
    name, response = data.get("tool_name"), data.get("tool_response")
    chars = response_chars(name, response) if isinstance(name, str) else 0
    if chars == 0 or (chars <= DEFAULT_MAX_CHARS and not has_config(state_dir)):
        return None  # the common case, decided without importing the settings
    from specialists.fronts.hooks.guarding import bounded_response, load_settings

    assert isinstance(name, str)
    settings = load_settings(state_dir, "post-tool-use")
    if chars <= settings.overflow.max_chars:
        return None
    spill = os.path.join(state_dir, OWNERS_DIR, keys[0] if keys else "cli-unknown", "spill")
    try:
        return bounded_response(name, response, settings, spill)
    except OSError as exc:  # a full disk: the model gets the whole result rather than none
        log("post-tool-use", f"result of {name} not spilled: {exc}")
        return None
