"""What pi's stdout tells the protocol state machine (pi_protocol.py), beyond runner events.

The translator (pi_events.py) turns each line into runner events for the job record and
these signals for the state machine: a closed union, every ladder over it ends in
assert_never.
"""

from __future__ import annotations

from typing import Any, Literal

from specialists.base.tuples import NamedTuple


class AgentStarted(NamedTuple):
    kind: Literal["agent_started"] = "agent_started"


class AgentEnded(NamedTuple):
    """One low-level run ended; `willRetry`: pi retries it on its own."""

    will_retry: bool = False
    kind: Literal["agent_ended"] = "agent_ended"


class AgentSettled(NamedTuple):
    """pi 1.x: no automatic work is left (no retry, compaction or queued message)."""

    aborted: bool = False
    kind: Literal["agent_settled"] = "agent_settled"


class AssistantDone(NamedTuple):
    """An assistant message ended (message_end)."""

    stop_reason: str | None
    error_message: str | None
    text: str
    kind: Literal["assistant_done"] = "assistant_done"


class TurnEnded(NamedTuple):
    kind: Literal["turn_ended"] = "turn_ended"


class RetryStarted(NamedTuple):
    kind: Literal["retry_started"] = "retry_started"


class RetryEnded(NamedTuple):
    success: bool
    final_error: str | None
    kind: Literal["retry_ended"] = "retry_ended"


class CompactionStarted(NamedTuple):
    kind: Literal["compaction_started"] = "compaction_started"


class CompactionEnded(NamedTuple):
    will_retry: bool
    kind: Literal["compaction_ended"] = "compaction_ended"


class CommandResponse(NamedTuple):
    """pi's answer to one of our commands (`id` is ours; None when pi could not parse it)."""

    id: str | None
    command: str | None
    success: bool
    data: Any
    error: str | None
    kind: Literal["command_response"] = "command_response"


class UiRequest(NamedTuple):
    """An extension asks the user something; nobody is there, so it is cancelled."""

    id: str
    method: str
    kind: Literal["ui_request"] = "ui_request"


Signal = (
    AgentStarted
    | AgentEnded
    | AgentSettled
    | AssistantDone
    | TurnEnded
    | RetryStarted
    | RetryEnded
    | CompactionStarted
    | CompactionEnded
    | CommandResponse
    | UiRequest
)
