"""A detached supervisor adopts its job's orphans (jobs/proctree.py): reap them, record them.

Called from the agent seam's reader (any thread; one at a time), at most every
TEND_INTERVAL_S: reaps adopted processes that have exited, never one a Popen still waits for
(process/spawn.py registers those), and writes the job's ledger when the tree changed.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from specialists.base.lazy import logger
from specialists.process.spawn import spawns_paused
from specialists.store import proctree

TEND_INTERVAL_S = 2.0

log = logger(__name__)

_tend_lock = threading.Lock()
_tended_at = 0.0
_recorded: frozenset[proctree.Proc] = frozenset()


def tend_orphans() -> None:
    """Reap and record, when this process adopts a job's orphans and it is time to."""
    global _tended_at, _recorded
    mark = proctree.adopting()
    now = time.monotonic()
    if mark is None or now - _tended_at < TEND_INTERVAL_S or not _tend_lock.acquire(False):
        return
    try:
        _tended_at = now
        with spawns_paused() as owned:
            proctree.reap_orphans(owned)
        found = frozenset(proctree.descendants([os.getpid()], mark))
        if found != _recorded:
            proctree.write_ledger(Path(mark), found)
            _recorded = found
    except OSError as exc:  # a full disk: the mark still finds them; say so in the log
        log.warning("could not record the job's processes in %s: %s", mark, exc)
    finally:
        _tend_lock.release()
