"""Atomic file replacement: readers see the old file or the new one, never a torn one.

The one place in src/ that calls os.replace (a test keeps it so). The temp file is created
exclusively and without following links (a planted `.status.json.<pid>.tmp` symlink cannot
redirect the write), mode 0600; rename(2) then replaces the name itself, so a symlink planted
at the destination is replaced, never followed.
"""

from __future__ import annotations

import contextlib
import errno
import os
from _thread import get_ident

from specialists.store.files import FILE_MODE, displace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def write_atomic(
    path: str | Path,
    data: bytes,
    *,
    durable: bool = False,
    dir_fd: int | None = None,
    displace_dir: bool = False,
    mode: int = FILE_MODE,
) -> None:
    """Write `data` to a temp file beside `path`, then rename it over `path`.

    On any failure (a full disk included) the temp file is removed and `path` is untouched.
    `durable` adds an fsync, for files written once that must survive a power cut. With
    `dir_fd`, `path` is relative to that directory. `displace_dir` moves a directory that
    stands where the file belongs aside instead of failing. `mode` is for files that are not
    ours alone (a user's settings file keeps the mode it had).
    """
    head, tail = os.path.split(os.fspath(path))
    # pid and thread: two threads of one process (the MCP server) may write the same file.
    tmp = os.path.join(head, f".{tail}.{os.getpid()}.{get_ident()}.tmp")
    try:
        fd = os.open(tmp, _FLAGS, mode, dir_fd=dir_fd)
    except FileExistsError:  # left by a crashed writer with our pid, or planted
        os.unlink(tmp, dir_fd=dir_fd)
        fd = os.open(tmp, _FLAGS, mode, dir_fd=dir_fd)
    try:
        os.fchmod(fd, mode)  # the umask may have taken bits away
        write_all(fd, data)
        if durable:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    os.close(fd)
    try:
        try:
            os.replace(tmp, path, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except OSError as exc:
            if not displace_dir or exc.errno not in (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST):
                raise
            displace(path, dir_fd=dir_fd)
            os.replace(tmp, path, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def rename_over(src: str | Path, dst: str | Path) -> None:
    """Give the finished file `src` the name `dst` in one step (a temp file streamed to the
    end, a log rotated): readers of `dst` see the old file or the new one."""
    os.replace(src, dst)


def write_all(fd: int, data: bytes) -> None:
    """All of `data` to `fd`, however many writes it takes."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
