"""A process as the kernel describes it in /proc/<pid>/stat, read in one place (Linux)."""

from __future__ import annotations


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
