"""Test doubles shipped with the package, for our tests and for users testing specialists.

    from specialists.native.testing import ScriptedModel, reply, call

    model = ScriptedModel([
        reply(calls=[call("bash", command="ls")]),
        reply("There are two files."),
    ])

Each model request takes the next script entry: a `Reply`, a plain string (a text reply), a
`ModelError` (raised, to test retries and fallbacks), or a callable `(ModelRequest) ->
Iterator[StreamEvent]` for anything else (blocking until an event, say). Every request is
kept in `model.requests`. Running past the end of the script raises a fatal ModelError.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from specialists.native.messages import ToolCall
from specialists.native.model import (
    Done,
    ModelError,
    ModelRequest,
    StopReason,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDone,
    UsageReport,
)

_call_ids = itertools.count(1)


@dataclass(frozen=True)
class Reply:
    text: str = ""
    calls: tuple[ToolCall, ...] = ()
    thinking: str = ""
    usage: UsageReport = field(default_factory=lambda: UsageReport(10, 5))
    stop_reason: StopReason | None = None


def call(name: str, /, **arguments: Any) -> ToolCall:
    return ToolCall(f"call_{next(_call_ids)}", name, arguments)


def reply(
    text: str = "",
    *,
    calls: Iterable[ToolCall] = (),
    thinking: str = "",
    usage: UsageReport | None = None,
    stop_reason: StopReason | None = None,
) -> Reply:
    return Reply(text, tuple(calls), thinking, usage or UsageReport(10, 5), stop_reason)


ScriptEntry = Reply | str | ModelError | Callable[[ModelRequest], Iterator[StreamEvent]]


def reply_events(r: Reply, chunk: int = 16) -> Iterator[StreamEvent]:
    """The stream a provider would send for `r`."""
    if r.thinking:
        yield ThinkingDelta(r.thinking)
    for start in range(0, len(r.text), chunk):
        yield TextDelta(r.text[start : start + chunk])
    for c in r.calls:
        yield ToolCallDone(c)
    yield r.usage
    yield Done(r.stop_reason or ("tool_use" if r.calls else "end"))


class ScriptedModel:
    """A ModelClient that plays a script; thread-safe."""

    def __init__(self, script: Iterable[ScriptEntry] = ()) -> None:
        self._script = list(script)
        self._lock = threading.Lock()
        self.requests: list[ModelRequest] = []

    def add(self, *entries: ScriptEntry) -> None:
        with self._lock:
            self._script.extend(entries)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    def stream(self, request: ModelRequest) -> Iterator[StreamEvent]:
        with self._lock:
            self.requests.append(request)
            if not self._script:
                raise ModelError(
                    f"ScriptedModel has no reply left for request {len(self.requests)}",
                    category="fatal",
                )
            entry = self._script.pop(0)
        if isinstance(entry, ModelError):
            raise entry
        if isinstance(entry, str):
            return reply_events(Reply(entry))
        if isinstance(entry, Reply):
            return reply_events(entry)
        return entry(request)


def last_tool_results(request: ModelRequest) -> Mapping[str, str]:
    """call_id -> result text for the tool results in a request (handy in assertions)."""
    return {i.call_id: i.text for i in request.items if i.kind == "tool_result"}
