"""Owner-directory files: opened safely, written whole, locked per owner.

Inbox, cursor, timer and lock files are untrusted (anyone may plant a symlink or a FIFO under
.specialists/): they are opened without following links and without blocking, and must be
regular files. The owner lock is re-entrant within a process, so a timer can fire into the
inbox under the one lock both use.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

from specialists.store.locks import lock

_held: dict[str, int] = {}  # lock path -> depth, for re-entry within one process
_held_guard = threading.RLock()


@contextlib.contextmanager
def owner_lock(path: Path) -> Iterator[None]:
    key = str(path)
    with _held_guard:
        if _held.get(key):
            _held[key] += 1
            try:
                yield
            finally:
                _held[key] -= 1
            return
        fd = open_regular(path, os.O_RDWR | os.O_CREAT)
        try:
            lock(fd)
            _held[key] = 1
            try:
                yield
            finally:
                _held.pop(key, None)
        finally:
            os.close(fd)  # closing releases the flock


def open_regular(path: Path, flags: int) -> int:
    """Open without following a planted symlink, and only if it is a regular file."""
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
