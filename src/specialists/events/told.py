"""One event of a job's end for one owner (`Told`), and whether a thread's parent has heard.

A job's end is one fact (supervise/hooks.py `JobEnd`); the features render it as the events
their owners read (a proc's `job_exit`, a thread parent's `child_closed`) and the one teller
(supervise/news.py) appends them; an owner a rendering addressed gets no generic end notice.
A session's completion notice (events/notices.py, after the final status) is left out for a
thread's parent whose inbox holds the child's `child_closed` already, only when the event is
provably there.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from specialists.base.errors import SpecialistsError
from specialists.base.owner import is_key
from specialists.base.tuples import NamedTuple
from specialists.events.inbox import Inbox
from specialists.events.model import Event, EventSource, event_id
from specialists.events.spill import EVENT_LIMITS, SpillLimits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from specialists.events.model import EventKind


class Told(NamedTuple):
    """One rendering of a job's end for one owner; its id is fixed, so telling twice is once."""

    owner: str
    kind: EventKind
    source: EventSource
    body: str
    source_id: str
    seq: int
    details: dict[str, Any]
    limits: SpillLimits | None = None

    def post(self, state_dir: Path) -> Event:
        """Append it to the owner's inbox. Raises OSError or SpecialistsError."""
        inbox = Inbox(state_dir, self.owner, limits=self.limits or EVENT_LIMITS)
        return inbox.append(
            self.kind,
            self.source,
            self.body,
            source_id=self.source_id,
            seq=self.seq,
            details=self.details,
        )


def post_all(state_dir: Path, told: Iterable[Told]) -> list[str]:
    """Post each; what failed as one line each, never raised (R-E5): the others still go."""
    problems = []
    for t in told:
        try:
            t.post(state_dir)
        except (OSError, SpecialistsError) as exc:
            where = event_id(t.source_id, t.kind, t.seq)
            problems.append(f"{where} for {t.owner} not posted: {exc}")
    return problems


def told_by_child_closed(state_dir: Path, thread: object) -> str | None:
    """The parent key of a thread job whose `child_closed` is in that parent's inbox already:
    for that parent the generic end notice would say the same thing twice. None otherwise,
    and whenever it cannot be shown (no thread, no inbox, an unreadable file): then the
    notice goes as before."""
    if not isinstance(thread, dict):
        return None
    tid, parent = thread.get("id"), thread.get("parent")
    if not (isinstance(tid, str) and isinstance(parent, str) and is_key(parent)):
        return None
    if not tid.replace("-", "").isalnum() or len(tid) > 80:
        return None
    return (
        parent if Inbox(state_dir, parent).holds_recent(event_id(tid, "child_closed", 1)) else None
    )
