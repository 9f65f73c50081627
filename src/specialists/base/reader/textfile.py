"""Read a small text file that anyone could have planted, without hanging or exhausting memory.

Definitions and config.toml live in directories other tools and people write to. One of
them may be a FIFO (opening it for reading blocks until a writer comes), a socket, a device
or a symlink to /dev/zero (reading never ends), a directory, or a regular file of
gigabytes. `read_text_file` stats the path before opening it, opens it non-blocking, checks
again on the open descriptor, reads at most `limit` bytes, and decodes UTF-8: every other
case is one `Invalid` line that says what the path is. A missing file raises
FileNotFoundError unchanged, so callers decide whether absence is normal.
"""

from __future__ import annotations

import errno
import os
import stat

from specialists.base.reader.values import Invalid

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

MAX_FILE_BYTES = 1024 * 1024  # definitions and config files are a few kilobytes

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)


def kind_of(mode: int) -> str:
    """What a file type reads as in a message ('a FIFO (named pipe)', 'a directory')."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a regular file"


def _refuse(mode: int) -> Invalid:
    return Invalid(None, f"is {kind_of(mode)}, not a regular file")


def _cannot(exc: OSError) -> Invalid:
    reason = exc.strerror or str(exc)
    if exc.errno == errno.ELOOP:
        reason += " (a symlink loop?)"
    return Invalid(None, f"cannot read file: {reason}")


def read_file_bytes(path: Path, *, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most `limit` bytes (symlinks are followed)."""
    try:
        before = os.stat(path)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise _cannot(exc) from None
    except ValueError as exc:  # a NUL byte in the path
        raise Invalid(None, f"cannot read file: {exc}") from None
    if not stat.S_ISREG(before.st_mode):
        raise _refuse(before.st_mode)  # never opened: opening a device can have effects
    if before.st_size > limit:
        raise _too_large(before.st_size, limit)
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise _cannot(exc) from None
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode):  # swapped for a FIFO or a device after the stat
            raise _refuse(now.st_mode)
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(65536, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise _cannot(exc) from None
    finally:
        os.close(fd)
    if size > limit:  # grew while we read it, or a /proc file whose size reads 0
        raise _too_large(None, limit)
    return b"".join(chunks)


def _too_large(size: int | None, limit: int) -> Invalid:
    shown = f"{limit // 1024:,} KiB" if limit >= 10240 else f"{limit:,} bytes"
    if size is None:
        return Invalid(None, f"is too large (more than {shown})")
    return Invalid(None, f"is too large ({size:,} bytes; at most {shown} is read)")


def read_text_file(path: Path, *, limit: int = MAX_FILE_BYTES) -> str:
    """UTF-8 text of a small regular file (a leading BOM is dropped). Raises `Invalid`."""
    raw = read_file_bytes(path, limit=limit)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise Invalid(None, f"not UTF-8 text (bad byte at offset {exc.start})") from None
    nul = text.find("\x00")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        raise Invalid(None, f"contains a NUL byte (line {line}); expected a text file")
    return text
