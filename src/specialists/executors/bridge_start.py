"""Reaching the machine's shared Ray connection: connect to its socket, or start it.

Race-free: a client first tries the socket; if nobody answers it takes the start lock (an
flock in the private directory), tries again (another client may have just started one),
and only then removes a stale socket and starts the bridge, waiting for its `ready` line.
Two supervisors starting at once therefore get one bridge. Every step is bounded: the
connect and the hello by `timeout`, the lock and the start by `timeout + START_GRACE_S`.

The bridge is started in its own session, and with a mark of its own in place of the job's
(MARK_ENV, store/proctree.py): ending a job kills what carries the job's mark and what lies
below its supervisor, which is a subreaper, but never a subtree marked for something else,
so the job that happened to start the bridge does not take it down with it. The starting
supervisor reaps it if it ends first.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from specialists.base.errors import AgentUnavailable
from specialists.executors.bridge_home import BridgeKey, Home, peer_of
from specialists.executors.bridge_wire import (
    HEADER,
    PROTOCOL,
    WireError,
    body_length,
    decode,
    frame,
)
from specialists.process.spawn import SpawnFailed, reaped, spawn
from specialists.store.files import create_private
from specialists.store.locks import try_lock
from specialists.store.proctree import MARK_ENV

START_GRACE_S = 60.0  # beyond connect_timeout: Python and Ray starting on a busy machine
LOCK_POLL_S = 0.05
Command = Callable[[BridgeKey, Home, float, float], Sequence[str]]


class NotRunning(Exception):
    """No bridge listens on the socket (none, a stale file, or one going away)."""


def ray_bridge_command(key: BridgeKey, home: Home, timeout: float, idle_s: float) -> list[str]:
    return [
        sys.executable,
        "-m",
        "specialists.executors.bridge_ray",
        *("--dir", str(home.path), "--name", key.name, "--idle", f"{idle_s:g}"),
        *("--address", key.address, "--namespace", key.namespace, "--timeout", f"{timeout:g}"),
    ]


@contextlib.contextmanager
def start_lock(home: Home, name: str, *, timeout: float) -> Iterator[None]:
    fd = create_private(home.at(name + ".lock"), os.O_RDWR)
    try:
        deadline = time.monotonic() + timeout
        while not try_lock(fd):
            if time.monotonic() >= deadline:
                raise AgentUnavailable(
                    f"the Ray bridge's lock {home.path / name}.lock was held over {timeout:g}s",
                    hint="another process is stuck starting the bridge",
                )
            time.sleep(LOCK_POLL_S)
        yield
    finally:
        os.close(fd)


def read_frame(sock: socket.socket) -> Any:
    """One frame from a blocking socket (its timeout applies); EOFError at its end."""
    body = _exactly(sock, body_length(_exactly(sock, HEADER.size)))
    return decode(body)


def _exactly(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise EOFError("the Ray bridge closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def dial(home: Home, name: str, timeout: float) -> tuple[socket.socket, dict[str, Any]]:
    """A connection that said hello, within `timeout`; NotRunning if nobody listens."""
    if not home.socket_present(name + ".sock"):
        raise NotRunning
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(home.at(name + ".sock"))
    except (ConnectionRefusedError, FileNotFoundError):
        sock.close()
        raise NotRunning from None
    except OSError as exc:
        sock.close()
        raise AgentUnavailable(f"cannot connect to the Ray bridge: {exc}") from None
    pid, uid = peer_of(sock)
    try:
        if uid != os.geteuid():
            raise AgentUnavailable(
                f"refusing the Ray bridge socket in {home.path}: served by uid {uid}"
            )
        sock.sendall(frame(["hello", 0]))
        reply = read_frame(sock)
    except TimeoutError:
        sock.close()
        raise AgentUnavailable(
            f"the Ray bridge (pid {pid}) accepted the connection but did not answer "
            f"within {timeout:g}s",
            hint=f"it may be stuck: `kill {pid}`, and the next job starts a new one",
        ) from None
    except (EOFError, ConnectionError):
        sock.close()
        raise NotRunning from None
    except (WireError, AgentUnavailable):
        sock.close()
        raise
    ok = isinstance(reply, list) and reply[:2] == ["ok", 0] and isinstance(reply[2], dict)
    if not ok or reply[2].get("protocol") != PROTOCOL:
        sock.close()
        raise AgentUnavailable(
            f"the Ray bridge (pid {pid}) speaks another protocol: {reply!r:.200}"
        )
    return sock, reply[2]


def connect_or_start(
    key: BridgeKey,
    home: Home,
    *,
    timeout: float,
    idle_s: float,
    command: Command = ray_bridge_command,
) -> tuple[socket.socket, dict[str, Any]]:
    with contextlib.suppress(NotRunning):
        return dial(home, key.name, timeout)
    with start_lock(home, key.name, timeout=timeout + START_GRACE_S):
        with contextlib.suppress(NotRunning):
            return dial(home, key.name, timeout)
        home.remove_stale(key.name + ".sock")
        start(command(key, home, timeout, idle_s), home, key.name, timeout + START_GRACE_S)
        try:
            return dial(home, key.name, timeout)
        except NotRunning:
            raise AgentUnavailable(
                "the Ray bridge said it was ready, then did not take the connection",
                hint=f"see {home.path / key.name}.log",
            ) from None


def bridge_env(env: Mapping[str, str], mark: str) -> dict[str, str]:
    """The supervisor's environment, the job's variables out and the bridge's own mark in."""
    out = {k: v for k, v in env.items() if not k.startswith("SPECIALISTS_JOB")}
    out[MARK_ENV] = mark
    return out


def start(argv: Sequence[str], home: Home, name: str, within: float) -> None:
    """Start the bridge and wait for its `ready` line; AgentUnavailable with its reason."""
    log_fd = create_private(home.at(name + ".log"), os.O_WRONLY | os.O_APPEND)
    try:
        os.ftruncate(log_fd, 0)
        proc = spawn(
            argv,
            cwd=home.path,
            env=bridge_env(os.environ, str(home.path / name)),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log_fd,
        )
    except SpawnFailed as exc:
        raise AgentUnavailable(f"cannot start the Ray bridge: {exc.reason}") from None
    finally:
        os.close(log_fd)
    threading.Thread(target=_reap, args=(proc,), name="ray-bridge-reaper", daemon=True).start()
    assert proc.stdout is not None
    try:
        line = _first_line(proc.stdout.fileno(), within)
    finally:
        proc.stdout.close()
    if line == "ready":
        return
    if proc.poll() is None:
        proc.kill()
    why = line.removeprefix("error: ") if line else f"no word from it within {within:g}s"
    raise AgentUnavailable(
        f"the Ray bridge did not start: {why}", hint=f"see {home.path / name}.log"
    )


def _reap(proc: subprocess.Popen[bytes]) -> None:
    proc.wait()
    reaped(proc)


def _first_line(fd: int, within: float) -> str:
    data = b""
    deadline = time.monotonic() + within
    while b"\n" not in data and len(data) < 4096:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    return data.split(b"\n", 1)[0].decode(errors="replace").strip()
