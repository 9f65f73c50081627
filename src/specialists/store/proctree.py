"""Every process of a job, found and killed, even after its supervisor died (stdlib only).

An agent runs in its own process group, but its descendants can leave it: pi runs each bash
tool call in a new session, and `setsid`, daemons and double forks do the same. Three things
find them:

- The mark. Every process a job starts carries MARK_ENV=<the job directory's real path> in
  its environment, and descendants inherit it. /proc/<pid>/environ shows the environment a
  process was started with, so a scan finds the job's processes after any crash. A process
  marked for another job belongs to that job (a job started from inside a job), and so does
  everything below it.
- The tree. /proc/<pid>/task/<tid>/children, walked down from a root. A detached supervisor
  is a child subreaper (`adopt_orphans`), so a descendant whose parent dies is re-parented to
  the supervisor instead of init, and stays in the supervisor's tree.
- The ledger. A supervisor that adopts orphans records what its tree holds (pid, start time)
  in the job's processes.json, so recovery can also kill a descendant that cleared its
  environment before the supervisor was killed.

A process is its pid together with its kernel start time; a pid alone may have been reused.
Killing opens a pidfd first and checks the identity through it, so a signal only reaches the
process that was checked. Everything found is stopped (SIGSTOP) before anything is killed, so
a process cannot fork away while its tree is being collected.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from specialists.base.errors import StoreError
from specialists.base.procstat import proc_stat
from specialists.base.tuples import NamedTuple
from specialists.store.file_record import FileRecord

MARK_ENV = "SPECIALISTS_JOB_DIR"
LEDGER = "processes"  # processes.json, a document of the job's record (kinds.py JOB)
LEDGER_FILE = "processes.json"
LEDGER_MAX_BYTES = 1 << 20
_MAX_ROUNDS = 16  # collect-and-stop passes before the kill; each catches what forked meanwhile
_PR_SET_CHILD_SUBREAPER = 36


# NamedTuples, not dataclasses: `specialists status` imports this module (recovery), and
# importing `dataclasses` costs more than its whole run budget allows.
class Proc(NamedTuple):
    """One process: pid and kernel start time (clock ticks since boot)."""

    pid: int
    start: int


class _Stat(NamedTuple):
    ppid: int
    pgrp: int
    state: bytes
    start: int


_adopting: str | None = None  # the mark of the job whose orphans this process adopts


def job_mark(job_dir: Path | str) -> str:
    return os.path.realpath(job_dir)


# --- reading /proc ----------------------------------------------------------------------


def _stat(pid: int) -> _Stat | None:
    try:
        info = proc_stat(pid)
    except OSError:
        return None
    return None if info is None else _Stat(info[2], info[3], info[1], info[4])


def identify(pid: int) -> Proc | None:
    """The live (not zombie) process `pid` is now, or None."""
    st = _stat(pid)
    if st is None or st.state == b"Z":
        return None
    return Proc(pid, st.start)


def children(pid: int) -> list[int]:
    """Direct children of `pid` (each thread lists the children it forked)."""
    found: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                found.extend(int(x) for x in f.read().split())
        except (OSError, ValueError):
            continue  # the thread ended meanwhile
    return found


def _mark_of(pid: int) -> str | None:
    """The job mark in `pid`'s start-up environment; "" when it has none, None if unreadable."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read()
    except OSError:
        return None  # gone, or another user's process
    key = MARK_ENV.encode() + b"="
    if env.startswith(key):
        at = len(key)
    else:
        found = env.find(b"\0" + key)
        if found < 0:
            return ""
        at = found + 1 + len(key)
    return env[at:].split(b"\0", 1)[0].decode("utf-8", "surrogateescape")


def marked(mark: str) -> list[Proc]:
    """Every live process whose environment carries `mark` (one pass over /proc)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and _mark_of(int(name)) == mark:
            proc = identify(int(name))
            if proc is not None:
                found.append(proc)
    return found


def descendants(roots: Iterable[int], mark: str | None) -> list[Proc]:
    """Live processes below `roots` (not the roots), minus other jobs' subtrees."""
    found: dict[int, Proc] = {}
    todo = list(roots)
    seen = set(todo)
    while todo:
        for child in children(todo.pop()):
            if child in seen:
                continue
            seen.add(child)
            theirs = _mark_of(child)
            if mark is not None and theirs and theirs != mark:
                continue  # another job's process, and its whole subtree with it
            proc = identify(child)
            if proc is not None:
                found[child] = proc
            todo.append(child)
    return list(found.values())


# --- killing ------------------------------------------------------------------------------


def _open_checked(proc: Proc) -> int | None:
    """A pidfd for exactly `proc`, or None when that process is gone."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return -1 if identify(proc.pid) == proc else None  # no pidfd: best effort
    try:
        fd = int(opener(proc.pid))
    except OSError:
        return None
    # Opened first, checked second: if `pid` now names another process, the start times
    # differ; if it names ours, the pidfd holds ours even should it exit and the pid be reused.
    if identify(proc.pid) != proc:
        os.close(fd)
        return None
    return fd


def _send(fd: int, proc: Proc, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if fd >= 0:
            signal.pidfd_send_signal(fd, sig)
        else:
            os.kill(proc.pid, sig)


def group_members(pgid: int) -> list[Proc]:
    """Live (not zombie) processes of process group `pgid` (one pass over /proc)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st is not None and st.pgrp == pgid and st.state != b"Z":
                found.append(Proc(int(name), st.start))
    return found


def signal_each(procs: Iterable[Proc], sig: int) -> None:
    """Send `sig` to each of `procs` that is still that very process (checked by pidfd)."""
    for proc in procs:
        fd = _open_checked(proc)
        if fd is None:
            continue
        try:
            _send(fd, proc, sig)
        finally:
            if fd >= 0:
                os.close(fd)


def kill_all(find: Callable[[], Iterable[Proc]], *, spare: Iterable[int] = ()) -> list[Proc]:
    """Stop everything `find()` returns, again until it returns nothing new, then SIGKILL it.

    `spare` pids are never signalled (the caller itself). Returns what was killed.
    """
    keep = {os.getpid(), *spare}
    held: dict[Proc, int] = {}
    try:
        for _ in range(_MAX_ROUNDS):
            new = {p for p in find() if p not in held and p.pid not in keep}
            if not new:
                break
            for proc in new:
                fd = _open_checked(proc)
                if fd is not None:
                    _send(fd, proc, signal.SIGSTOP)
                    held[proc] = fd
        for proc, fd in held.items():
            _send(fd, proc, signal.SIGKILL)
    finally:
        for fd in held.values():
            if fd >= 0:
                os.close(fd)
    return sorted(held)


def kill_job(job_dir: Path, agent: Proc | None = None) -> list[Proc]:
    """Kill every process that provably belongs to the job: its agent and the agent's tree,
    what the ledger recorded, what carries the job's mark, and everything below those.
    When this process adopts the job's orphans, its own tree too."""
    mark = job_mark(job_dir)
    recorded = read_ledger(job_dir)
    if agent is not None:
        _kill_group(agent)

    def find() -> list[Proc]:
        roots = {p for p in recorded if identify(p.pid) == p}
        if agent is not None and identify(agent.pid) == agent:
            roots.add(agent)
        roots.update(marked(mark))
        below = [p.pid for p in roots]
        if _adopting == mark:
            below.append(os.getpid())
        return [*roots, *descendants(below, mark)]

    # A detached supervisor's parent is its keeper (supervise/keeper.py), which carries the
    # job's mark too: it must outlive the end it guards, or a supervisor killed while it tells
    # its end would leave that to the next reader.
    return kill_all(find, spare=(os.getppid(),) if _adopting == mark else ())


def kill_tree_of_self(mark: str | None) -> list[Proc]:
    """Kill everything below this process except other jobs' subtrees (the keeper's end)."""
    return kill_all(lambda: descendants([os.getpid()], mark))


def kill_tree(root: Proc, mark: str | None = None) -> list[Proc]:
    """Kill `root`, its process group and everything below it (not other jobs' subtrees)."""
    _kill_group(root)

    def find() -> list[Proc]:
        here = [root] if identify(root.pid) == root else []
        return [*here, *descendants([root.pid], mark)]

    return kill_all(find)


def _kill_group(leader: Proc) -> None:
    """SIGKILL the group `leader` leads, while it provably lives: its group id is then ours."""
    fd = _open_checked(leader)
    if fd is None:
        return
    try:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(leader.pid, signal.SIGKILL)
    finally:
        if fd >= 0:
            os.close(fd)


# --- the live supervisor: adopting orphans and keeping the ledger --------------------------


def adopt_orphans(job_dir: Path) -> bool:
    """Make this process (a job's detached supervisor) the reaper of the job's orphans."""
    global _adopting
    import ctypes  # only a detached supervisor needs it; `status` must not pay for it

    if not sys.platform.startswith("linux"):
        return False
    if ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        return False
    _adopting = job_mark(job_dir)
    return True


def adopting() -> str | None:
    """The mark of the job whose orphans this process adopts, if any."""
    return _adopting


def reap_orphans(owned: Iterable[int]) -> int:
    """Reap adopted children that have exited, except `owned` ones (a Popen reaps those)."""
    skip = set(owned)
    reaped = 0
    for pid in children(os.getpid()):
        st = _stat(pid)
        if pid in skip or st is None or st.state != b"Z":
            continue
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
            reaped += 1
    return reaped


def write_ledger(job_dir: Path, procs: Iterable[Proc]) -> None:
    rows = [[p.pid, p.start] for p in sorted(procs)]
    _ledger(job_dir).replace(LEDGER, {"v": 1, "processes": rows})


def read_ledger(job_dir: Path) -> list[Proc]:
    """The recorded processes; [] when there is no ledger or it is not ours to trust."""
    try:
        rows = (_ledger(job_dir).read(LEDGER) or {}).get("processes")
    except (OSError, StoreError):
        return []
    if not isinstance(rows, list):
        return []
    return [
        Proc(row[0], row[1])
        for row in rows
        if isinstance(row, list)
        and len(row) == 2
        and all(type(x) is int and 0 < x < 1 << 62 for x in row)
    ]


def _ledger(job_dir: Path) -> FileRecord:
    return FileRecord(job_dir, max_doc=LEDGER_MAX_BYTES)
