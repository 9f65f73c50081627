"""When a running job needs attention: a pure decision over event facts and a clock.

The supervisor feeds `AttentionWatch` every runner event (`saw`) and asks it at each loop
step what is due (`due`). Three triggers, each raised once per state:

- **quiet**: no event at all for `quiet_ms` while a run is going and no tool call is open,
  counted from the run's first agent event: the agent's start-up (a Node CLI loading on a
  busy machine, a process started per run) is not the agent being quiet. It is raised
  again only after activity resumed and the agent went quiet again.
- **tool_open**: the oldest open tool call has been open `tool_ms`. Raised once per call;
  while a call is open the quiet trigger waits (the call is what the agent is doing).
- **failures**: `failures` failed mutating tool calls in a row (MUTATING_TOOLS: the tools
  that edit files or run commands). Raised once per streak; a successful mutating call ends
  the streak, other tools do not touch it.

What is raised is a fact (how long, which tool), never a verdict that the agent is stuck.
Between runs (waiting for a follow-up or for events) nothing is due and the quiet clock
does not run. At most MAX_RAISED notices per job, so no pattern of events floods the owner.

`saw` runs on every event the agent produces: a handful of attribute updates, no
allocation on the common path (benchmarks/bench_attention.py).
"""

from __future__ import annotations

from typing import Literal

from specialists.base.tuples import NamedTuple
from specialists.features.attention.settings import AttentionSettings

MAX_OPEN = 32  # open tool calls tracked; more at once is a flood, not a plan
MAX_RAISED = 20  # notices per job, whatever the agent does

# The tools that change the working tree or run commands, by the names each runner reports
# (verified on pi 0.73.1, Claude Code 2.1.197, Codex 0.171.0: codex reports its command
# and file-change items as bash and edit; runners/codex_events.py).
MUTATING_TOOLS: dict[str, frozenset[str]] = {
    "pi": frozenset({"bash", "edit", "write"}),
    "native": frozenset({"bash", "edit", "write"}),
    "claude": frozenset({"Bash", "Edit", "Write", "MultiEdit", "NotebookEdit"}),
    "codex": frozenset({"bash", "edit"}),
    "command": frozenset(),
    "proc": frozenset(),
}
DEFAULT_MUTATING = frozenset({"bash", "edit", "write", "Bash", "Edit", "Write", "MultiEdit"})
# The events that open or close tool calls; every other one only marks activity.
TOOL_EVENTS = frozenset({"toolcall", "tool_execution_end", "turn_end"})


def mutating_tools(runner: str) -> frozenset[str]:
    return MUTATING_TOOLS.get(runner, DEFAULT_MUTATING)


class Quiet(NamedTuple):
    quiet_ms: int
    threshold_ms: int
    last_event: str  # the kind of the last event seen ("" before any)
    kind: Literal["quiet"] = "quiet"


class ToolOpen(NamedTuple):
    tool: str
    open_ms: int
    threshold_ms: int
    kind: Literal["tool_open"] = "tool_open"


class Failures(NamedTuple):
    count: int  # type: ignore[assignment]  # (a field: tuple.count is never used here)
    tools: tuple[str, ...]  # the failed calls' tools, oldest first
    kind: Literal["failures"] = "failures"


Attention = Quiet | ToolOpen | Failures


class AttentionWatch:
    """The attention state of one job (mutable; one per supervisor)."""

    __slots__ = (
        "_failures_raised",
        "_open",
        "_tool_raised",
        "failures",
        "last_at",
        "last_event",
        "mutating",
        "quiet_ms",
        "quiet_raised",
        "raised",
        "streak",
        "tool_ms",
    )

    def __init__(self, settings: AttentionSettings, mutating: frozenset[str], now: float) -> None:
        self.quiet_ms = settings.quiet_ms
        self.tool_ms = settings.tool_ms
        self.failures = settings.failures
        self.mutating = mutating
        self.last_at = now
        self.last_event = ""  # the kind of the last event of the current run; "" before one
        self.streak: list[str] = []  # the failed mutating calls of the current streak
        self.raised = 0
        self._open: list[tuple[str, float]] = []  # (tool, since), oldest first
        self.quiet_raised = False
        self._tool_raised: float | None = None  # the `since` of the call raised for
        self._failures_raised = False

    @property
    def open_tool(self) -> tuple[str, float] | None:
        """The oldest open tool call and since when, if any."""
        return self._open[0] if self._open else None

    def saw(self, now: float, event: str, tool: str | None = None, *, error: bool = False) -> bool:
        """One event of the agent. True when it ended a raised state (activity resumed, the
        raised call closed, the streak ended): the owner's view should clear."""
        self.last_at = now
        self.last_event = event
        ended = self.quiet_raised
        if event not in TOOL_EVENTS:  # most events: thinking, text, heartbeats
            if ended:
                self.quiet_raised = False
            return ended
        self.quiet_raised = False
        if event == "toolcall" and tool is not None:
            if len(self._open) < MAX_OPEN:
                self._open.append((tool, now))
        elif event == "tool_execution_end":
            ended = self._closed(tool) or ended
            if tool in self.mutating:
                if error:
                    self.streak.append(tool)
                    del self.streak[: -(self.failures or 1)]
                elif self.streak:
                    self.streak.clear()
                    ended = ended or self._failures_raised
                    self._failures_raised = False
        elif event == "turn_end" and self._open:
            ended = self._tool_raised is not None or ended
            self._open.clear()  # every call of the turn has its result by now
            self._tool_raised = None
        return ended

    def run_ended(self) -> None:
        """The run is over: calls it left open (an abort) are not open any more, and the
        next run's quiet clock waits for that run's first event."""
        self._open.clear()
        self._tool_raised = None
        self.quiet_raised = False
        self.last_event = ""

    def due(self, now: float, *, running: bool) -> Attention | None:
        """What to raise now, if anything (at most one per call)."""
        if not running:
            self.last_at = now  # quiet counts only while a run is going
            return None
        if self.raised >= MAX_RAISED:
            return None
        found = self._due(now)
        if found is not None:
            self.raised += 1
        return found

    def _due(self, now: float) -> Attention | None:
        limit = self.failures
        if limit and len(self.streak) >= limit and not self._failures_raised:
            self._failures_raised = True
            return Failures(len(self.streak), tuple(self.streak))
        if self._open:
            tool, since = self._open[0]
            if self.tool_ms and self._tool_raised != since and now - since >= self.tool_ms / 1000:
                self._tool_raised = since
                return ToolOpen(tool, int((now - since) * 1000), self.tool_ms)
            return None
        if not self.last_event:  # nothing heard from the agent in this run yet
            self.last_at = now
            return None
        quiet_s = now - self.last_at
        if self.quiet_ms and not self.quiet_raised and quiet_s >= self.quiet_ms / 1000:
            self.quiet_raised = True
            return Quiet(int(quiet_s * 1000), self.quiet_ms, self.last_event)
        return None

    def _closed(self, tool: str | None) -> bool:
        """Close the oldest open call of `tool` (else the oldest); True if it was raised."""
        if not self._open:
            return False
        index = next((i for i, (name, _) in enumerate(self._open) if name == tool), 0)
        _, since = self._open.pop(index)
        if self._tool_raised == since:
            self._tool_raised = None
            return True
        return False
