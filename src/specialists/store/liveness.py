"""Is a recorded process still the one we started? pid + kernel start time.

A pid alone can be reused after a crash; the start time (in clock ticks since boot, field 22
of /proc/<pid>/stat) tells the new process from the old one.
"""

from __future__ import annotations

import os

from specialists.base.procstat import proc_stat


def process_start_time(pid: int) -> int | None:
    """Start time of `pid` in clock ticks since boot, or None if there is no such process."""
    try:
        info = proc_stat(pid)
    except PermissionError:
        return -1  # exists but unreadable: treat as alive with unknown start time
    return None if info is None else info[4]


def is_alive(pid: int | None, start_time: int | None) -> bool:
    """True when `pid` runs and (if known) started at `start_time`. Zombies count as dead."""
    if not pid or pid <= 0:
        return False
    if not os.path.exists("/proc"):
        return pid_exists(pid)
    started = process_start_time(pid)
    if started is None:
        return False
    if _is_zombie(pid):
        return False
    return start_time is None or started == -1 or started == start_time


def _state(pid: int) -> bytes:
    """The process's state letter (R, S, D, T, t, Z, ...); b"" when it cannot be read."""
    try:
        info = proc_stat(pid)
    except OSError:
        return b""
    return b"" if info is None else info[1]


def _is_zombie(pid: int) -> bool:
    return _state(pid) == b"Z"


def is_frozen(pid: int | None) -> bool:
    """Stopped (SIGSTOP, a terminal's Ctrl-Z) or held by a tracer: it reads no inbox and
    handles no signal until it is continued. Only SIGKILL reaches it."""
    return pid is not None and pid > 0 and _state(pid) in (b"T", b"t")


def pid_exists(pid: int) -> bool:
    """Whether any process (zombies included) has this pid: the `kill(pid, 0)` probe."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
