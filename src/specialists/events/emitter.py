"""The producer side: one `Emitter` per source incarnation, never raising into its caller.

A source is whatever produces events (a proc job's supervisor, a child thread, the timer
firer). Its ids are `<base>.<nonce>:<kind>:<seq>`: the nonce is fresh for every incarnation,
so a restarted source never reuses an id that is already in an inbox (R-E7), and the seq
counts per kind. A failed append (full disk, damaged owner dir) is logged and returned as
None (R-E5): the work that produced the event goes on.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specialists.base.errors import SpecialistsError
from specialists.base.lazy import logger
from specialists.events.inbox import Inbox
from specialists.events.model import Event, EventSource
from specialists.events.spill import EVENT_LIMITS, SpillLimits

TYPE_CHECKING = False  # no `typing` at run time: the hooks load this module
if TYPE_CHECKING:
    from specialists.events.model import EventKind

log = logger("specialists.events")


def new_nonce() -> str:
    return os.urandom(4).hex()


class Emitter:
    def __init__(
        self,
        state_root: Path,
        base: str,
        *,
        nonce: str | None = None,
        limits: SpillLimits = EVENT_LIMITS,
    ) -> None:
        self.state_root = state_root
        self.source_id = f"{base}.{nonce or new_nonce()}"
        self.limits = limits  # bodies past limits.max_chars are spilled (events.maxChars)
        self._seq: Counter[str] = Counter()

    def emit(
        self,
        owner: str,
        kind: EventKind,
        source: EventSource,
        body: str,
        details: Mapping[str, Any] | None = None,
    ) -> Event | None:
        self._seq[kind] += 1
        try:
            inbox = Inbox(self.state_root, owner, limits=self.limits)
            return inbox.append(
                kind, source, body, source_id=self.source_id, seq=self._seq[kind], details=details
            )
        except (OSError, SpecialistsError) as exc:
            log.warning("event %s for %s not delivered: %s", kind, owner, exc)
            return None
