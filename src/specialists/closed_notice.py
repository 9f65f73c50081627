"""Whether a thread's parent already heard of the child's end as its `child_closed`.

A thread job's end reaches its parent twice otherwise: the child_closed (threads/closing.py,
appended just before the job's final status) and the generic end notice (supervise/news.py,
notices.py) for the same end. Both senders ask `told_by_child_closed` and leave that parent
out when the child_closed is provably in its inbox. Standard library only: the hooks import
notices.py, which calls this.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from specialists.owner import is_key

CHILD_CLOSED_TAIL_BYTES = 1 << 20  # where a child_closed just appended is looked for


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
    path = state_dir / "owners" / parent / "events.jsonl"  # events/owners.py, inbox.py
    needle = json.dumps(f"{tid}:child_closed:1").encode()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        start = max(0, info.st_size - CHILD_CLOSED_TAIL_BYTES)
        tail = os.pread(fd, info.st_size - start, start)
    except OSError:
        return None
    finally:
        os.close(fd)
    return parent if needle in tail else None
