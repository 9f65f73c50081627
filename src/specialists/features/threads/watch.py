"""A child that ended unseen is closed when the threads room next looks at it.

A child whose supervisor was killed (SIGKILL, a crash, a reboot) writes no end. Crash recovery
records it when anyone looks at the job (its owner, the parent, gets the store's completion
notice then), and the threads room closes it the moment it sees the job ended without a close
(`settled_view`): the parent's thread tools and `specialists threads`, so a dead child wakes
its parent with one `child_closed` carrying the error (R-S9). Cheap when nothing is due: one
status read per open child.
"""

from __future__ import annotations

from specialists.features.threads.closing import settle
from specialists.features.threads.records import ThreadRecord, ThreadStore
from specialists.features.threads.state import Child, child_view
from specialists.store.jobs import JobStore


def settled_view(threads: ThreadStore, jobs: JobStore, record: ThreadRecord) -> Child:
    """The child as it stands, after closing it if its job ended without a close."""
    child = child_view(threads, jobs, record)  # records a dead supervisor on the way
    ended = child.status is not None and not child.status.active
    if child.phase == "ended" or (child.phase == "closing" and ended):
        settle(threads.state_root, record.job_id)
        child = child_view(threads, jobs, record)
    return child
