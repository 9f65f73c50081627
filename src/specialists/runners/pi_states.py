"""The states of pi's RPC conversation (pi_protocol.py), as a closed union.

Each state carries what only it needs (a deadline, the queries still awaited); every ladder
over them ends in assert_never. `RunFacts` is what the run in progress has told us so far.
"""

from __future__ import annotations

from typing import Literal

from specialists.base.tuples import NamedTuple
from specialists.store.fields import Declared


class Idle(NamedTuple):
    kind: Literal["idle"] = "idle"


class Running(NamedTuple):
    """A prompt is being answered."""

    kind: Literal["running"] = "running"


class Settling(NamedTuple):
    """agent_end: waiting for agent_settled (a retry or compaction may come first)."""

    deadline: float
    kind: Literal["settling"] = "settling"


class Retrying(NamedTuple):
    """An auto-retry (or a compaction that will retry) is pending: waiting for agent_start."""

    kind: Literal["retrying"] = "retrying"


class Compacting(NamedTuple):
    """Compaction after a failed run: waiting for compaction_end."""

    kind: Literal["compacting"] = "compacting"


class SwitchingModel(NamedTuple):
    """The run failed; `set_model` to the fallback is sent and waits for pi's answer."""

    request: str
    deadline: float
    kind: Literal["switching_model"] = "switching_model"


class Finalizing(NamedTuple):
    """Final: waiting for the answers to get_last_assistant_text and get_state."""

    awaiting: frozenset[str]
    deadline: float
    restarted: bool = False  # pi began another run meanwhile (e.g. a late steer)
    kind: Literal["finalizing"] = "finalizing"


PiState = Idle | Running | Settling | Retrying | Compacting | SwitchingModel | Finalizing
BUSY_STATES = frozenset({"running", "settling", "retrying", "compacting", "switching_model"})


class RunFacts(Declared):
    """What one run has told us so far (a checkpoint carries `to_dict()`, pi_adopt.py)."""

    message: str = ""  # what the run answers (sent again on the fallback model)
    stop_reason: str | None = None
    error_message: str | None = None
    fallback_text: str = ""  # the last assistant text seen, if the text query fails
    final_error: str | None = None
    abort_requested: bool = False
    turn_limit_hit: bool = False
    turns: int = 0
    answer: str | None = None
