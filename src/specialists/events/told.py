"""Whether a thread's parent has heard of the child's end already, through its child_closed.

threads/closing.py appends `child_closed` to the parent's inbox just before the child job's
end is told; for that parent the generic end notice (notices.py, supervise/news.py) would
say the same thing twice, so it is left out, only when the event is provably there.
"""

from __future__ import annotations

from pathlib import Path

from specialists.base.owner import is_key
from specialists.events.inbox import Inbox
from specialists.events.model import event_id


def told_by_child_closed(state_dir: Path, thread: object) -> str | None:
    """The parent key of a thread job whose `child_closed` is in that parent's inbox already
    (threads/closing.py appends it just before the job's end is told): for that parent the
    generic end notice would say the same thing twice. None otherwise, and whenever it cannot
    be shown (no thread, no inbox, an unreadable file): then the notice goes as before."""
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
