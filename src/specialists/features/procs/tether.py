"""Cancel on exit: what a proc job is tethered to, and whether that still lives.

By default a proc job outlives the session that started it (see docs/procs.md for why). A
session that wants its command gone with it asks `cancel_on_exit`; the job is then tethered
to the session's process (pid and kernel start time, so a reused pid is not it) or, when the
caller is one of our jobs, to that job. The proc runner looks once a second; when the
tether is gone, it asks its own supervisor to stop, the way bg_cancel does.
"""

from __future__ import annotations

from pathlib import Path

from specialists.base.errors import StoreError, UserError
from specialists.base.owner import agent_ancestor
from specialists.features.procs.spec import Tether
from specialists.store.jobs import JobStore
from specialists.store.liveness import is_alive, process_start_time
from specialists.store.recovery import supervisor_alive


def session_tether(job_id: str | None) -> Tether:
    """The caller's session: its job, else the agent CLI process above this one."""
    if job_id:
        return Tether("job", job_id=job_id)
    key = agent_ancestor()
    if key is None:
        raise UserError(
            "cancel_on_exit: no agent session process found above this one to follow",
            hint="leave cancel_on_exit off and cancel the job with bg_cancel",
        )
    pid_text, _, start_text = key.removeprefix("agent-").partition(".")
    return Tether("process", pid=int(pid_text), start=int(start_text))


def process_tether(pid: int) -> Tether:
    start = process_start_time(pid)
    if start is None or start < 0:
        raise UserError(f"cancel on exit: process {pid} cannot be followed (gone or not ours)")
    return Tether("process", pid=pid, start=start)


def tether_alive(tether: Tether, state_root: Path) -> bool:
    if tether.kind == "process":
        return is_alive(tether.pid, tether.start)
    try:
        status = JobStore(state_root, news=None).read_status(tether.job_id)
    except (StoreError, UserError, OSError, ValueError):
        return True  # unreadable for a moment (being replaced): not proof that it ended
    return status is None or (status.active and supervisor_alive(status))
