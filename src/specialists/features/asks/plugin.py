"""What asks add to a job's life: its open asks end with it (nobody waits for a reply)."""

from __future__ import annotations

import os

from specialists.base.ops import register_noun
from specialists.native.agent_table import register_tools
from specialists.supervise.hooks import HOOKS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from specialists.supervise.hooks import JobEnd


def register() -> None:
    for noun in ("asks", "reply"):
        register_noun(noun, f"specialists.features.asks.verbs:{noun.upper()}")
        register_tools(f"specialists.features.asks.verbs:{noun.upper()}")
    HOOKS.before_end.append(_cancel_open)
    HOOKS.paused.append(_cancel_open)


def _cancel_open(ending: JobEnd) -> None:
    # A job that never asked has no asks/ directory: one lstat, and the asks room stays
    # unloaded (`asks.files.ASKS_DIR`).
    if not os.path.lexists(ending.store.job_dir(ending.record.id) / "asks"):
        return
    from specialists.features.asks.ops import cancel_open

    if ending.final == "interrupted":
        why = "the asking job was interrupted"
    else:
        why = f"the asking job ended {ending.final}"
    for ask_id in cancel_open(ending.store.root, ending.record.id, why):
        ending.event("ask_cancelled", ask=ask_id, reason=why)
