"""Where a machine's shared Ray connection lives: one private directory per user, and in it
one socket, lock and log per cluster (address, namespace and specialists version).

The directory is `$XDG_RUNTIME_DIR/specialists`, else `<temp dir>/specialists-<uid>`. It is
opened once without following links and checked on the descriptor (a directory, ours, mode
0700); every later name is reached through that descriptor (`/proc/self/fd/N/<name>`), so a
directory swapped for a link after the check is never followed, and the socket's path stays
short whatever the directory's own path is (a socket path has 108 bytes at most).

A name in it that is not our own socket (a link, a file, someone else's socket) is refused,
never removed: only a socket of ours that no bridge listens on is stale and may go.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import socket
import stat
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

from specialists.base.errors import AgentUnavailable

log = logging.getLogger(__name__)

HOME_NAME = "specialists"
_PEERCRED = struct.Struct("3i")  # pid, uid, gid
_HINT = "remove it: the directory must be a real one that only you can use (mode 0700)"


@dataclass(frozen=True)
class BridgeKey:
    """Which cluster a bridge serves; the name is a digest of it (one bridge per key)."""

    address: str  # host:port, resolved ("auto" is never a key)
    namespace: str

    @property
    def name(self) -> str:
        from specialists import __version__  # an old bridge would run old node code

        text = f"{self.address}\0{self.namespace}\0{__version__}"
        return "ray-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def home_path() -> Path:
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime) and os.path.isdir(runtime):
        return Path(runtime) / HOME_NAME
    return Path(tempfile.gettempdir()) / f"{HOME_NAME}-{os.geteuid()}"


class Home:
    """The open private directory; `close` when done."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or home_path()
        try:
            os.mkdir(self.path, 0o700)
        except FileExistsError:
            log.debug("the Ray bridge directory %s exists; it is checked next", self.path)
        except OSError as exc:
            raise AgentUnavailable(
                f"cannot make the Ray bridge directory {self.path}: {exc.strerror or exc}"
            ) from None
        try:
            self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError as exc:
            why = "a symbolic link" if exc.errno in (errno.ELOOP, errno.ENOTDIR) else exc.strerror
            raise AgentUnavailable(
                f"refusing the Ray bridge directory {self.path}: {why}", hint=_HINT
            ) from None
        info = os.fstat(self.fd)
        problem = ""
        if info.st_uid != os.geteuid():
            problem = f"owned by uid {info.st_uid}, not you ({os.geteuid()})"
        elif stat.S_IMODE(info.st_mode) & 0o077:
            problem = f"mode {stat.S_IMODE(info.st_mode):04o}, open to others"
        if problem:
            os.close(self.fd)
            raise AgentUnavailable(
                f"refusing the Ray bridge directory {self.path}: {problem}", hint=_HINT
            )

    def at(self, name: str) -> str:
        """`name` in the directory, by its descriptor (short, and never re-resolved)."""
        return f"/proc/self/fd/{self.fd}/{name}"

    def socket_present(self, name: str) -> bool:
        """Whether our socket `name` exists; AgentUnavailable if something else is there."""
        try:
            info = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        if stat.S_ISLNK(info.st_mode):
            what = "a symbolic link"
        elif not stat.S_ISSOCK(info.st_mode):
            what = "not a socket"
        elif info.st_uid != os.geteuid():
            what = f"a socket of uid {info.st_uid}"
        else:
            return True
        raise AgentUnavailable(
            f"refusing {self.path / name}: {what}, not the Ray bridge's socket",
            hint="remove it; the next job starts a new bridge",
        )

    def remove_stale(self, name: str) -> None:
        """Remove our socket `name` that nobody listens on (checked by the caller)."""
        if self.socket_present(name):
            try:
                os.unlink(name, dir_fd=self.fd)
            except FileNotFoundError:
                log.debug("stale bridge socket %s was removed meanwhile", name)

    def close(self) -> None:
        os.close(self.fd)


def peer_of(sock: socket.socket) -> tuple[int, int]:
    """(pid, uid) of the process at the other end of a Unix socket (the kernel's word)."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
    pid, uid, _ = _PEERCRED.unpack(raw)
    return int(pid), int(uid)
