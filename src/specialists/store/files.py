"""Reading and creating files under .specialists/ without trusting what is there.

An agent runs with the project as its working directory, so anything in the store may have
been planted or damaged: a symlink to /dev/zero or /proc/self/mem, a FIFO, a directory where a
file belongs, a huge file, JSON nested too deep to parse. So every read here:
- never follows a symlink in the last component (O_NOFOLLOW) and never blocks on open
  (O_NONBLOCK: opening a FIFO would otherwise wait for a writer forever);
- checks after opening (fstat) that it holds a regular file;
- reads at most a cap, so no file can exhaust memory;
and one JSON parse turns every way a document can be bad (syntax, an integer past Python's
4,300-digit limit, nesting that overflows the parser, text that is not Unicode) into one
StoreError naming the file. Whatever is in the way of a file we must write is moved aside
(`displace`), never followed and never deleted.

Job data is private: what the store creates is 0700 (directories) and 0600 (files) whatever
the umask.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import time

from specialists.base.errors import Planted, StoreError

TYPE_CHECKING = False  # no `typing` at run time: every hook loads this module (logfile)
if TYPE_CHECKING:
    from typing import Any

DIR_MODE = 0o700
FILE_MODE = 0o600
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

OUT_OF_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})

PathArg = str | os.PathLike[str]


def is_out_of_space(exc: BaseException | None) -> bool:
    return isinstance(exc, OSError) and exc.errno in OUT_OF_SPACE


def unwritten(what: str, exc: OSError) -> StoreError:
    """`what` could not be written (a full disk, a damaged directory): one clear StoreError
    for the front, with the way out when the disk is full."""
    hint = "free some space on the disk that holds .specialists/" if is_out_of_space(exc) else None
    return StoreError(f"{what}: {exc.strerror or exc}", hint=hint)


def size_text(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} bytes"


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def open_regular(
    path: PathArg, flags: int = 0, *, dir_fd: int | None = None, label: object = None
) -> int:
    """An fd on the regular file at `path` (never a symlink's target, never a FIFO).

    Raises FileNotFoundError if nothing is there, StoreError (naming `label`, by default the
    path) if something else is.
    """
    return _open_regular(path, flags, dir_fd, label)[0]


def _open_regular(
    path: PathArg, flags: int, dir_fd: int | None, label: object, follow: bool = False
) -> tuple[int, os.stat_result]:
    if label is None:
        label = path
    open_flags = _READ_FLAGS | flags
    if follow:  # a link's target, but never a device opened (opening one can act) or a FIFO
        mode = os.stat(path, dir_fd=dir_fd).st_mode
        if not stat.S_ISREG(mode):
            raise Planted(f"{label} is {_kind(mode)}, not a regular file")
        open_flags &= ~os.O_NOFOLLOW
    try:
        fd = os.open(path, open_flags, FILE_MODE, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise Planted(f"{label} is a symbolic link; not followed") from None
        if exc.errno == errno.ENXIO:  # a FIFO opened for writing without a reader
            raise Planted(f"{label} is a FIFO, not a regular file") from None
        if exc.errno == errno.EISDIR:
            raise Planted(f"{label} is a directory, not a file") from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):  # (swapped for something else since the stat)
        os.close(fd)
        raise Planted(f"{label} is {_kind(st.st_mode)}, not a regular file")
    return fd, st


def read_bytes(
    path: PathArg,
    cap: int,
    *,
    dir_fd: int | None = None,
    label: object = None,
    follow: bool = False,
) -> bytes:
    """The whole regular file at `path`, refused (StoreError) when larger than `cap`. Ours
    are never read through a symlink; `follow` reads another tool's file (~/.claude.json)
    through one, still never a FIFO or a device."""
    if label is None:
        label = path
    fd, st = _open_regular(path, 0, dir_fd, label, follow)
    try:
        if st.st_size > cap:
            size, most = size_text(st.st_size), size_text(cap)
            raise StoreError(f"{label} is too large ({size}, more than the {most} read)")
        data = os.read(fd, st.st_size + 1)  # short of that: the end of the file
        if len(data) > st.st_size:  # it grew meanwhile: read on, up to the cap
            chunks = [data]
            left = cap + 1 - len(data)
            while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
                chunks.append(chunk)
                left -= len(chunk)
            data = b"".join(chunks)
    finally:
        os.close(fd)
    if len(data) > cap:
        raise StoreError(f"{label} grew past the {size_text(cap)} read")
    return data


def parse_json(raw: bytes, where: object) -> Any:
    """Any JSON value, or StoreError saying (once, in one line) why `raw` is not one."""
    try:
        data = json.loads(raw)
    except RecursionError:
        raise StoreError(f"{where} is nested too deeply to be read") from None
    except ValueError as exc:  # bad syntax, bad UTF-8, an integer over 4,300 digits
        raise StoreError(f"{where} is not valid JSON: {str(exc)[:120]}") from None
    if b"\\ud" in raw or b"\\uD" in raw:  # escapes that may be lone surrogates
        try:
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise StoreError(f"{where} holds text that is not valid Unicode") from None
    return data


def parse_object(raw: bytes, where: object) -> dict[str, Any]:
    data = parse_json(raw, where)
    if type(data) is not dict:
        raise StoreError(f"{where} does not hold a JSON object")
    return data


def read_object(path: PathArg, cap: int, *, dir_fd: int | None = None) -> dict[str, Any]:
    return parse_object(read_bytes(path, cap, dir_fd=dir_fd), path)


def object_or_none(path: PathArg, cap: int) -> dict[str, Any] | None:
    """The JSON object at `path`, or None when it is missing, planted, too large or damaged:
    for a reader to whom such a file means "nothing known" (a cache, a count, a cursor)."""
    try:
        return read_object(path, cap)
    except (OSError, StoreError):
        return None


# --- creating -----------------------------------------------------------------------------


def ensure_dir(path: PathArg) -> None:
    """A private directory at `path` (made 0700 if new). Refuses a symlink or a non-directory
    in its place (StoreError), so nothing is ever created through a planted link."""
    try:
        os.mkdir(path, DIR_MODE)
    except FileExistsError:
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode):
            what = "a symbolic link" if stat.S_ISLNK(st.st_mode) else _kind(st.st_mode)
            raise Planted(f"{path} is {what}, not a directory; not followed") from None
        if stat.S_IMODE(st.st_mode) != DIR_MODE and st.st_uid == os.geteuid():
            os.chmod(path, DIR_MODE)  # made by an older version or under another umask
        return
    os.chmod(path, DIR_MODE)  # exactly 0700, whatever the umask


def remove_tree(path: PathArg) -> None:
    """A directory tree gone, as far as it can be (what a failed start, a destroy or gc
    leaves). shutil is imported only here: with bz2 and lzma it costs a run some 5 ms."""
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def open_dir(path: PathArg, *, dir_fd: int | None = None) -> int:
    """An fd on the real directory at `path`; StoreError for a symlink or a non-directory."""
    try:
        return os.open(path, DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise Planted(f"{path} is not a directory (a symbolic link?); not followed") from None
        raise


def create_private(name: PathArg, flags: int, *, dir_fd: int | None = None) -> int:
    """Open (creating if needed) the regular file `name` for writing, mode 0600.

    A symlink, FIFO or directory in its place is moved aside first: it is never followed.
    """
    for _ in range(3):
        try:
            fd = os.open(
                name,
                flags | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                FILE_MODE,
                dir_fd=dir_fd,
            )
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
                raise
            displace(name, dir_fd=dir_fd)
            continue
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            if stat.S_IMODE(st.st_mode) != FILE_MODE:
                os.fchmod(fd, FILE_MODE)
            return fd
        os.close(fd)
        displace(name, dir_fd=dir_fd)
    raise StoreError(f"{name} keeps being replaced by something that is not a file")


def displace(name: PathArg, *, dir_fd: int | None = None) -> str:
    """Move whatever is at `name` aside (to `<name>.displaced-<ns>`); returns the new name.

    Renaming moves a symlink itself, never its target, and keeps the evidence.
    """
    aside = f"{os.fspath(name)}.displaced-{time.time_ns()}"
    try:
        os.rename(name, aside, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except FileNotFoundError:
        return aside  # gone meanwhile: nothing is in the way any more
    return aside
