"""Which Ray cluster a job means, without importing Ray: the address, the probe, the names.

Both ways of reaching a cluster use these: a supervisor connected to Ray itself (direct,
ray_link.py) and one that goes through the machine's shared connection (bridge_client.py),
which must not import Ray at all (that import is most of a driver's memory).
"""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specialists.errors import AgentUnavailable, UserError

CURRENT_CLUSTER = Path("/tmp/ray/ray_current_cluster")
MAX_CLUSTER_FILE = 4096


def resolve_address(address: str, *, current: Path = CURRENT_CLUSTER) -> str:
    """host:port for `address` ("auto": $RAY_ADDRESS, else the cluster `ray start` made).

    The address is never handed to Ray as "auto": Ray would read `current` itself, and
    /tmp/ray sits in a world-writable /tmp where another local user's file could name their
    cluster, which would then receive the job and its code. The file is taken only when it
    is this user's own (`cluster_file`)."""
    if address != "auto":
        return address
    found = os.environ.get("RAY_ADDRESS", "").strip()  # named by this user: taken as named
    if not found:
        found = cluster_file(current)
    if not found:
        raise AgentUnavailable(
            "no Ray cluster is running on this machine (executor address 'auto')",
            hint="start one with `ray start --head`, or set address in [executor]",
        )
    return found


def cluster_file(path: Path, uid: int | None = None) -> str:
    """The first line of the `ray start` address file, or "" when there is none. Refused
    (one UserError line, nothing joined) unless this user wrote it: a regular file (no
    symlink), owned by `uid` (default: ours), writable by nobody else, in a directory of
    ours or root's that nobody else can rename it in."""
    uid = os.getuid() if uid is None else uid
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise _not_ours(path, "it", exc.strerror or "cannot be opened (a symlink?)") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _not_ours(path, "it", "is not a regular file")
        if st.st_uid != uid:
            raise _not_ours(path, "it", f"belongs to uid {st.st_uid}, not to this user (uid {uid})")
        if st.st_mode & 0o022:
            raise _not_ours(
                path, "it", f"can be written by others (mode {stat.S_IMODE(st.st_mode):o})"
            )
        _check_folder(path, uid)
        data = os.read(fd, MAX_CLUSTER_FILE)
    finally:
        os.close(fd)
    lines = data.decode("utf-8", "replace").strip().splitlines()
    return lines[0].strip() if lines else ""


def _check_folder(path: Path, uid: int) -> None:
    folder = path.parent
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode):
        raise _not_ours(path, str(folder), "is not a directory (a symlink?)")
    if st.st_uid not in (uid, 0):
        raise _not_ours(path, str(folder), f"belongs to uid {st.st_uid}, who can replace it")
    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        raise _not_ours(path, str(folder), "can be written by others, who can replace it")


def _not_ours(path: Path, subject: str, why: str) -> UserError:
    return UserError(
        f"not joining the Ray cluster that {path} names: {subject} {why}",
        hint="name the cluster: address in [executor] or $RAY_ADDRESS, or `ray start --head` "
        "yourself after removing the file",
    )


def probe(address: str, timeout: float) -> None:
    """A TCP connect to the cluster's address, within `timeout`; AgentUnavailable if not."""
    target = address.removeprefix("ray://")
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise UserError(f"bad Ray address {address!r}", hint="use host:port, ray://host:port")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as exc:
        why = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise AgentUnavailable(
            f"cannot reach the Ray cluster at {address}: {why}",
            hint="is it running? check address in [executor] or --executor",
        ) from None


def describe_node(node_id: str, ip: str) -> str:
    return f"Ray node {node_id[:12]} ({ip})"


def options_of(settings: Mapping[str, Any]) -> tuple[str, str, float]:
    return (
        str(settings.get("address", "auto")),
        str(settings.get("namespace", "specialists")),
        float(settings.get("connect_timeout_s", 15.0)),
    )
