"""The keeper: the parent of a detached supervisor, so nothing of a job outlives it.

A detached supervisor is a child subreaper (jobs/proctree.py): a descendant whose parent
dies is re-parented to it. But when the supervisor itself dies (`kill -9`, the OOM killer),
what it leaves is re-parented to init: the agent dies with it (PR_SET_PDEATHSIG), yet a
process that left the agent's group and session (pi runs each bash tool call in a session
of its own; `setsid`, daemons) lived on until the next reader of the job recovered it.

So `python -m specialists _supervise` forks first, before it imports or boots anything: the
child runs the supervisor, the parent becomes the keeper with no more than a bare
interpreter's memory (what it needs once the supervisor is gone, it imports then). A
supervisor forked by a fork server (forks.py) has the server as its keeper instead: one
process keeps every job it forked, with this module's `after`. The keeper is a subreaper too
and does nothing but wait. The kernel re-parents whatever the dying supervisor leaves to the
nearest living subreaper above it, the keeper, so it holds every such process even if it
cleared its environment (no mark) after the last ledger write. When the supervisor is gone:

- the job still active (the supervisor died without writing its end): the keeper runs the
  crash recovery any reader would (jobs/recovery.py): a takeover where the job can be taken
  over, else every process of the job killed (its own tree included) and the job's end
  recorded (`cancelled` when a stop was asked, else `error: supervisor crashed`);
- the job ended: whatever of it still lives in the keeper's tree is killed (not other jobs'
  processes: a workflow's child jobs carry their own mark).

It then exits with the supervisor's exit code. The keeper never holds the job's lock (it
closes its copy at once), so recovery anywhere else is never blocked by it; killing the
keeper leaves the supervisor as it was.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

KEEPER_NAME = b"sp-keeper"  # its name in ps/top (15 bytes at most)
SETTLE_S = 10.0  # how long it waits for another reader that is recovering the job
_PR_SET_NAME = 15
_PR_SET_CHILD_SUBREAPER = 36
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"  # a detached supervisor's too


def fork_keeper(job_dir: str, lock_fd: int | None, boot: Callable[[], object]) -> int | None:
    """Fork; in the child (the supervisor to be) return None. The parent keeps the child
    until it exits and returns the exit code to give (`boot`: the composition root's, for a
    recovery that tells the job's owners). Where there is no fork or no subreaper (not
    Linux), None at once: the supervisor runs without a keeper."""
    if not sys.platform.startswith("linux"):
        return None
    child = os.fork()
    if child == 0:
        return None
    if lock_fd is not None:
        os.close(lock_fd)  # the lock is the supervisor's alone
    return keep(job_dir, child, boot)


def keep(job_dir: str, child: int, boot: Callable[[], object]) -> int:
    """Wait for the supervisor `child` (reaping whatever is re-parented meanwhile), then
    make sure nothing of its job lives on. Returns the exit code to give."""
    _become_keeper()
    status = _wait_for(child)
    code = os.waitstatus_to_exitcode(status)
    if code == 0 and not _has_children():
        return 0  # its job is done and left nothing below us: nothing to import or to do
    try:
        import logging
        from pathlib import Path

        from specialists.store.news import NEWS

        logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)  # on supervisor.log
        NEWS.boot = NEWS.boot or boot  # booted only if a recovery tells the owners
        after(Path(job_dir), child, code)
    finally:
        reap_all()
    return code if code >= 0 else 128 - code


def _wait_for(child: int) -> int:
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:  # it was reaped elsewhere: impossible, but do not hang
            return 0
        if pid == child:
            return status


def after(job_dir: Path, child: int, code: int) -> None:
    """The supervisor `child` of the job in `job_dir` exited with `code`: recover the job if
    it died active, then kill what is left of the job below this process."""
    # Loaded once the supervisor is gone: the keeper's own life costs no imports.
    import logging

    from specialists.base.errors import SpecialistsError
    from specialists.process.spawn import signal_name
    from specialists.store import proctree
    from specialists.store.jobs import JobStore
    from specialists.store.news import NEWS
    from specialists.store.recovery import recover_if_dead

    log = logging.getLogger("specialists.keeper")
    store = JobStore(job_dir.parent.parent, news=NEWS)
    deadline = time.monotonic() + SETTLE_S
    while True:
        try:
            status = store.read_status(job_dir.name)
            if (
                status is not None
                and (status.active or status.telling)
                and status.supervisor_pid == child
            ):
                how = f"killed by {signal_name(-code)}" if code < 0 else f"exit code {code}"
                log.warning("supervisor %d of job %s died (%s) with the job active", child,
                            job_dir.name, how)  # fmt: skip
                status = recover_if_dead(store, job_dir.name, status)
        except (SpecialistsError, OSError) as exc:  # unreadable: still kill what is ours
            log.warning("job %s: its status cannot be read or recovered: %s", job_dir.name, exc)
            status = None
        if status is None or not status.active:
            break
        if status.supervisor_pid != child or time.monotonic() >= deadline:
            return  # taken over by a new supervisor (or another reader is still at it)
        time.sleep(0.1)  # another reader holds the job's lock: it is recovering the job
    killed = proctree.kill_tree_of_self(proctree.job_mark(job_dir))
    if killed:
        log.warning("killed %d process(es) job %s left behind", len(killed), job_dir.name)


def _has_children() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)  # reaps one that has exited: still, it was there
    except ChildProcessError:
        return False
    return True


def reap_all() -> None:
    """Reap every child that has exited (a subreaper inherits orphans), without waiting."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _become_keeper() -> None:
    """Name this process and make it the subreaper of the job (proctree.adopt_orphans
    would, but its imports would stay in memory all the job long)."""
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    prctl(_PR_SET_NAME, KEEPER_NAME, 0, 0, 0)
    prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
