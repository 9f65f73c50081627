"""What the loop reports while it works. The runner adapter maps these 1:1 onto RunnerEvents;
the loop itself knows nothing about runners or the job store."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from specialists.native.model import UsageReport


@dataclass(frozen=True)
class Progress:
    """A vocabulary event: thinking, text, toolcall, tool_execution, tool_execution_end,
    turn_end, retry, steer_ack, notice."""

    event: str
    fields: Mapping[str, Any] = field(default_factory=dict)
    log: bool = True
    current_tool: str | None = None
    kind: Literal["progress"] = "progress"


@dataclass(frozen=True)
class TextOut:
    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True)
class Spent:
    usage: UsageReport
    cost_usd: float
    model: str
    kind: Literal["spent"] = "spent"


@dataclass(frozen=True)
class LoopFinished:
    """The run is over. `yielded`: it ended on a yielding tool (the agent waits for an
    event), so `text` is not an answer."""

    text: str
    error: str | None = None
    turns: int = 0
    yielded: bool = False
    kind: Literal["finished"] = "finished"


LoopEvent = Progress | TextOut | Spent | LoopFinished
Emit = Callable[[LoopEvent], None]
