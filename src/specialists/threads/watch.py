"""For a parent that waits: find its children that ended unseen and close them now.

A child whose supervisor was killed (SIGKILL, a crash, a reboot) writes no end; crash recovery
records it when someone looks at the job, and the close hook then sends child_closed with the
error (R-S9). A front that lets a parent wait for events (the native supervisor, the hooks)
calls `settle_ended_children` now and then, so a dead child wakes its parent without anyone
running `specialists status`. Cheap when nothing is due: a directory listing and one
status read per open child.
"""

from __future__ import annotations

from pathlib import Path

from specialists.jobs.store import JobStore
from specialists.threads.closing import settle
from specialists.threads.records import ThreadStore
from specialists.threads.state import child_view


def settle_ended_children(state_root: Path, owner: str, now_ms: int) -> list[str]:
    """The ids of the child_closed events this call sent (recovery may send some itself)."""
    threads, jobs = ThreadStore(state_root), JobStore(state_root)
    sent: list[str] = []
    for record in threads.children_of(owner):
        if threads.closed(record.id) is not None:
            continue
        child = child_view(threads, jobs, record)  # records a dead supervisor on the way
        if child.phase in ("ended", "closing") and child.status and not child.status.active:
            event = settle(state_root, record.job_id, now_ms)
            if event:
                sent.append(event)
    return sent
