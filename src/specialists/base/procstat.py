"""A process as the kernel describes it in /proc, read in one place (Linux)."""

from __future__ import annotations

import os


def proc_stat(pid: int) -> tuple[str, bytes, int, int, int] | None:
    """(command name, state letter, parent pid, process group, start time in clock ticks
    since boot), or None when there is no such process. Other OSErrors (a PermissionError
    under hidepid) are the caller's to read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read(4096)
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The name (field 2) may hold spaces and parens: it ends at the last ')'.
    open_at, close_at = raw.find(b"("), raw.rfind(b")")
    fields = raw[close_at + 2 :].split()
    try:
        name = raw[open_at + 1 : close_at].decode("utf-8", "replace")
        return name, fields[0], int(fields[1]), int(fields[2]), int(fields[19])
    except (IndexError, ValueError):
        return None


def rss_bytes() -> int:
    """This process's resident memory (/proc/self/statm); 0 where it cannot be read."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0
