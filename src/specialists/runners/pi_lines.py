"""Recognising pi's stdout lines from their first bytes, and the delta inside an update.

pi sends one `message_update` per delta, with the usage so far. These helpers tell a line's
kind from a bytes prefix and decode only the short `delta` string, so a long stream costs
milliseconds. pi writes its keys in a fixed order (1.6.0: `type`, `usage`,
`assistantMessageEvent`); a line in any other shape is simply parsed in full by the caller
(pi_events.py).
"""

from __future__ import annotations

from json.decoder import scanstring  # type: ignore[attr-defined]

UPDATE_PREFIX = b'{"type":"message_update",'
_EVENT_KEY = b'"assistantMessageEvent":{"type":"'
_EVENT_KEY_WITHIN = 1024  # the usage object before it is a few hundred bytes
TOOL_UPDATE = b'{"type":"tool_execution_update"'
ASSISTANT_START = b'{"type":"message_start","message":{"role":"assistant"'
MESSAGE_START = b'{"type":"message_start"'
ASSISTANT_END = b'{"type":"message_end","message":{"role":"assistant"'
MESSAGE_END = b'{"type":"message_end"'
AGENT_END = b'{"type":"agent_end"'
TURN_END = b'{"type":"turn_end"'
_DELTA_KEY = b'"delta":'


def update_kind(line: bytes) -> tuple[str, int] | None:
    """(assistantMessageEvent.type, end offset) when `line` has pi's message_update prefix."""
    if not line.startswith(UPDATE_PREFIX):
        return None
    key = line.find(_EVENT_KEY, len(UPDATE_PREFIX), _EVENT_KEY_WITHIN)
    if key < 0:
        return None
    start = key + len(_EVENT_KEY)
    end = line.find(b'"', start, start + 40)
    if end < 0:
        return None
    return line[start:end].decode("ascii", "replace"), end


def extract_delta(line: bytes, pos: int) -> str | None:
    """The JSON string after `"delta":` near `pos`, decoded from a short slice of the line."""
    key = line.find(_DELTA_KEY, pos, pos + 96)
    if key < 0:
        return None
    start = key + len(_DELTA_KEY)
    if line[start : start + 1] != b'"':
        return None
    window = 512
    while True:
        # A slice may cut a UTF-8 sequence at its end; that only matters when the string is
        # longer than the slice, and then the string is unterminated and we grow the slice.
        text = line[start : start + window].decode("utf-8", "replace")
        try:
            value, _end = scanstring(text, 1)
        except ValueError:
            if start + window >= len(line):
                return None
            window *= 8
            continue
        return str(value)
