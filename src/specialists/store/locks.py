"""File locking in one place (a test keeps every flock in src/ here).

A job is locked by an exclusive flock on its directory itself, not on a file inside it: there
is no lock file that could be replaced by a planted symlink, and opening the directory with
O_NOFOLLOW refuses a job directory that is a link out of the store.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterator

from specialists.store.files import create_private, open_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def try_lock(fd: int) -> bool:
    """Take an exclusive flock on `fd` without waiting; False if another holder has it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            return False
        raise
    return True


def lock(fd: int) -> None:
    """Wait for an exclusive flock on `fd`; it is released when `fd` is closed."""
    fcntl.flock(fd, fcntl.LOCK_EX)


class JobLock:
    """An exclusive flock on the job directory. Its supervisor holds it for its whole life;
    the launcher takes it first and hands the descriptor over (`fd`)."""

    def __init__(self, job_dir: Path, fd: int | None = None) -> None:
        self.path = job_dir
        self.fd = fd if fd is not None else open_dir(job_dir)

    def try_acquire(self) -> bool:
        return try_lock(self.fd)

    def release(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


@contextlib.contextmanager
def held(path: Path) -> Iterator[None]:
    """Hold an exclusive flock on the file `path` (created 0600) for a read-modify-write."""
    fd = create_private(path, os.O_RDWR)
    try:
        lock(fd)
        yield
    finally:
        os.close(fd)  # closing releases the lock
