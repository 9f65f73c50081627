"""A child that ended unseen is closed when the threads room next looks at it.

A child whose supervisor was killed (SIGKILL, a crash, a reboot) writes no end. Crash recovery
records it when anyone looks at the job (its owner, the parent, gets the store's completion
notice then), and the threads room closes it the moment it sees the job ended without a close
(`settled_view`): the parent's thread tools, `specialists threads`, and
`settle_ended_children`, which a front that lets a parent wait for events (the native
supervisor, the hooks) calls now and then, so a dead child wakes its parent with one
`child_closed` carrying the error (R-S9). Cheap when nothing is due: one status read per
open child.
"""

from __future__ import annotations

import time
from pathlib import Path

from specialists.features.threads.closing import settle
from specialists.features.threads.records import ThreadRecord, ThreadStore
from specialists.features.threads.state import Child, child_view, job_store
from specialists.store.jobs import JobStore


def settled_view(threads: ThreadStore, jobs: JobStore, record: ThreadRecord) -> Child:
    """The child as it stands, after closing it if its job ended without a close."""
    child = child_view(threads, jobs, record)  # records a dead supervisor on the way
    ended = child.status is not None and not child.status.active
    if child.phase == "ended" or (child.phase == "closing" and ended):
        settle(threads.state_root, record.job_id, int(time.time() * 1000))
        child = child_view(threads, jobs, record)
    return child


def settle_ended_children(state_root: Path, owner: str) -> list[str]:
    """The ids of the children of `owner` this call closed."""
    threads, jobs = ThreadStore(state_root), job_store(state_root)
    open_ = [r for r in threads.children_of(owner) if threads.closed(r.id) is None]
    return [r.id for r in open_ if settled_view(threads, jobs, r).closed is not None]
