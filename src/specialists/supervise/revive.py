"""Crash recovery's way back in: a dead supervisor's job is taken over instead of ended.

Recovery (jobs/recovery.py) sits at the floor and cannot start a supervisor; the store's
`news` (news.py) hands it `revive`, which lands here. A job can be taken over when its
supervisor's last checkpoint (reattach.json, supervise/reattach.py) says so and its
executor.json names the agent's process on its node: a fresh supervisor is started in
reattach mode, holding the job's lock (recovery's descriptor, inherited), so no other
reader can end or revive the job meanwhile. Stdlib only until a supervisor is started:
every reader that finds a dead supervisor comes through here.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from specialists.base.errors import StoreError
from specialists.store.files import read_object

log = logging.getLogger("specialists.supervise")

CHECKPOINT_FILE = "reattach.json"
EXECUTOR_FILE = "executor.json"  # as executors/job.py writes it
MAX_CHECKPOINT = 4 * 1024 * 1024


def read_json(path: Path, cap: int = MAX_CHECKPOINT) -> dict[str, Any] | None:
    """A small JSON object file, or None: missing, or damaged (a link, not a regular file,
    too big, not JSON: logged, and the job is then ended as an ordinary crash)."""
    try:
        return read_object(path, cap)
    except FileNotFoundError:
        return None
    except (StoreError, OSError) as exc:
        log.warning("%s not used: %s", path, exc)
        return None


def revive(state_dir: Path, job_id: str, lock_fd: int) -> int | str | None:
    """Start a supervisor that takes the job over: its pid; or why it cannot be (a remote
    job that must end); or None (nothing to take over: a local job, or a remote one that
    died before its first checkpoint)."""
    job_dir = state_dir / "jobs" / job_id
    checkpoint = read_json(job_dir / CHECKPOINT_FILE)
    if checkpoint is None:
        return None
    if not checkpoint.get("adoptable"):
        return str(checkpoint.get("why") or "its last checkpoint cannot be taken over")
    executor = read_json(job_dir / EXECUTOR_FILE) or {}
    if not executor.get("proc"):
        return "executor.json names no agent process on the node"
    from specialists.supervise.launch import spawn_reattaching

    try:
        return spawn_reattaching(job_dir, lock_fd)
    except OSError as exc:
        return f"no supervisor could be started to reattach: {exc.strerror or exc}"
