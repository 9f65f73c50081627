"""`replay/<path>`: play a recorded model conversation from a file (the model side only).

Tools really run; only the model's answers come from the recording, in order. Use it for
offline demos and to test a specialist without an API key. A recording is JSONL (one turn
per line; blank lines and lines starting with # are skipped) or YAML (a list of turns, or a
mapping with a `turns` list). A turn:

    {"text": "...", "thinking": "...",
     "tool_calls": [{"name": "bash", "arguments": {"command": "ls"}, "id": "optional"}],
     "usage": {"input_tokens": 10, "output_tokens": 5},
     "stop_reason": "end",            # optional: end | tool_use | max_tokens
     "delay_ms": 0}                   # optional pause before the turn streams
    {"error": {"category": "throttled", "message": "rate limited", "retry_after": 0}}

When resuming a session, playback starts after the model turns already in it. Asking for
more turns than the recording holds is a clear, fatal error.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, cast

from specialists.errors import ConfigError
from specialists.native.messages import MODEL_SIDE, Item
from specialists.native.model import (
    Done,
    ErrorCategory,
    ModelError,
    ModelRequest,
    StopReason,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDone,
    UsageReport,
)
from specialists.native.providers.common import parse_arguments
from specialists.reader import Invalid, load_json
from specialists.reader.textfile import read_text_file

_CATEGORIES = ("transient", "throttled", "fatal", "config", "overflow")
_STOPS = ("end", "tool_use", "max_tokens", "refusal", "other")
_WORDS = re.compile(r"\S+\s*|\s+")


REPLAY_MAX_BYTES = 64 * 1024 * 1024  # a recording is read whole: a bound, not a promise
REPLAY_MAX_NODES = 1_000_000


def load_recording(path: Path) -> list[dict[str, Any]]:
    try:  # a regular file only (a FIFO would hang the job), bounded
        text = read_text_file(path, limit=REPLAY_MAX_BYTES)
    except FileNotFoundError:
        raise ConfigError(f"cannot read replay recording {path}: no such file") from None
    except Invalid as exc:
        raise ConfigError(f"cannot read replay recording {path}: {exc.problem}") from None
    if path.suffix in (".yaml", ".yml"):
        turns = _yaml_turns(path, text)
    else:
        turns = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                turns.append((number, load_json(line, "JSON", max_nodes=None)))
            except Invalid as exc:
                raise ConfigError(
                    f"{path}: line {number}: not valid JSON ({exc.problem})"
                ) from None
        turns = [(n, t) for n, t in turns if not (isinstance(t, dict) and "replay" in t)]
    return [_check_turn(path, where, turn) for where, turn in turns]


def _yaml_turns(path: Path, text: str) -> list[tuple[int, Any]]:
    from specialists.catalog.files import parse_yaml  # the bounded loader; imports yaml

    try:
        data = parse_yaml(text, max_nodes=REPLAY_MAX_NODES)
    except Invalid as exc:
        raise ConfigError(f"{path}: {exc.problem}") from None
    if isinstance(data, dict):
        data = data.get("turns")
    if not isinstance(data, list):
        raise ConfigError(f"{path}: expected a list of turns (or a mapping with 'turns')")
    return [(index, turn) for index, turn in enumerate(data, 1)]


def _check_turn(path: Path, where: int, turn: Any) -> dict[str, Any]:
    at = f"{path}: turn at {where}"
    if not isinstance(turn, dict):
        raise ConfigError(f"{at}: expected an object")
    if "error" in turn:
        error = turn["error"]
        if not isinstance(error, dict) or error.get("category") not in _CATEGORIES:
            raise ConfigError(f"{at}: error needs a category, one of {', '.join(_CATEGORIES)}")
        return turn
    for key in ("text", "thinking"):
        if key in turn and not isinstance(turn[key], str):
            raise ConfigError(f"{at}: {key} must be a string")
    calls = turn.get("tool_calls", [])
    if not isinstance(calls, list) or not all(
        isinstance(c, dict) and isinstance(c.get("name"), str) for c in calls
    ):
        raise ConfigError(f"{at}: tool_calls must be a list of objects with a name")
    usage = turn.get("usage")
    if usage is not None and not (
        isinstance(usage, dict)
        and all(isinstance(v, int) and not isinstance(v, bool) for v in usage.values())
    ):
        raise ConfigError(f"{at}: usage must be an object of token counts (integers)")
    delay = turn.get("delay_ms")
    if delay is not None and (isinstance(delay, bool) or not isinstance(delay, int | float)):
        raise ConfigError(f"{at}: delay_ms must be a number")
    if turn.get("stop_reason") not in (None, *_STOPS):
        raise ConfigError(f"{at}: stop_reason must be one of {', '.join(_STOPS)}")
    if not turn.get("text") and not calls and not turn.get("thinking"):
        raise ConfigError(f"{at}: a turn needs text, thinking or tool_calls")
    return turn


def model_turns(items: tuple[Item, ...]) -> int:
    """How many model turns a conversation already holds."""
    count, inside = 0, False
    for item in items:
        model_side = item.kind in MODEL_SIDE
        if model_side and not inside:
            count += 1
        inside = model_side
    return count


class ReplayModel:
    def __init__(self, path: Path, *, sleep: bool = True) -> None:
        self.path = path
        self.turns = load_recording(path)
        self._sleep = sleep
        self._next: int | None = None

    def stream(self, request: ModelRequest) -> Iterator[StreamEvent]:
        if self._next is None:
            self._next = self._start_index(model_turns(request.items))
        index = self._next
        self._next += 1
        if index >= len(self.turns):
            raise ModelError(
                f"replay: the conversation asked for model turn {index + 1} but {self.path} "
                f"records only {len(self.turns)}",
                category="fatal",
                hint="record more turns, or lower the specialist's max_turns",
            )
        return self._play(index, self.turns[index])

    def _start_index(self, played: int) -> int:
        """Where playback resumes after `played` model turns: recorded errors were consumed
        by retries but never reached the session, so they are skipped, not counted."""
        if played <= 0:
            return 0
        seen = 0
        for index, turn in enumerate(self.turns):
            if "error" not in turn:
                seen += 1
                if seen == played:
                    return index + 1
        return len(self.turns) + played - seen  # past the end: a clear error follows

    def _play(self, index: int, turn: Mapping[str, Any]) -> Iterator[StreamEvent]:
        if "error" in turn:
            error = turn["error"]
            retry_after = error.get("retry_after")
            raise ModelError(
                f"replay: {error.get('message') or 'recorded error'}",
                category=cast(ErrorCategory, error["category"]),
                retry_after=float(retry_after) if retry_after is not None else None,
            )
        delay = float(turn.get("delay_ms") or 0) / 1000
        if delay and self._sleep:
            time.sleep(delay)
        if turn.get("thinking"):
            yield ThinkingDelta(str(turn["thinking"]))
        for word in _WORDS.findall(str(turn.get("text") or "")):
            yield TextDelta(word)
        calls = turn.get("tool_calls") or []
        for n, call in enumerate(calls):
            call_id = str(call.get("id") or f"replay_{index + 1}_{n + 1}")
            args = call.get("arguments", {})
            raw = args if isinstance(args, str) else json.dumps(args)
            yield ToolCallDone(parse_arguments(call_id, call["name"], raw))
        usage = turn.get("usage") or {}
        yield UsageReport(int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0))
        stop = turn.get("stop_reason") or ("tool_use" if calls else "end")
        yield Done(cast(StopReason, stop))
