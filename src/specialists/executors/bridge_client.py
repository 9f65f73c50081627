"""A supervisor's side of the machine's shared Ray connection (`connection = "shared"`).

The supervisor never imports Ray: `BridgeNodeClient` is the node-client seam (remote.py) over
the bridge's socket (bridge_serve.py), and `BridgeConnector` places jobs through it. One
`BridgeLink` per cluster per process carries every call, each a numbered request whose
answer a reader thread hands to its future, so a job's read in flight never holds up its
writes.

Failures keep the meanings they have over Ray: a bridge that dies (or closes, or sends a
bad frame) fails every call in flight with `LinkLost`, and the next call connects again,
starting a new bridge if none runs, so the reader asks again from its last sequence number.
A node that cannot be reached again is `NodeGone`. Nothing waits forever: an answer later
than its deadline fails its call with `LinkLost`, and a bridge that has said nothing since
such a call was sent is presumed stuck and its connection dropped.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import logging
import select
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any

from specialists.base.errors import AgentUnavailable, Bug, UserError
from specialists.executors.bridge_home import BridgeKey, Home
from specialists.executors.bridge_start import Command, connect_or_start, ray_bridge_command
from specialists.executors.bridge_wire import HEADER, WireError, body_length, decode, frame
from specialists.executors.ray_address import describe_node, options_of, probe, resolve_address
from specialists.executors.remote import LinkLost, NodeGone

log = logging.getLogger(__name__)

CALL_REPLY_S = 120.0  # a `call` (a read waits 5 s on its node) unanswered this long: lost
SYNC_GRACE_S = 30.0  # beyond a call_sync's own timeout, before its connection is suspect
SEND_TIMEOUT_S = 30.0
CONNECT_TRIES = 2
DEFAULT_IDLE_S = 120.0
Pending = concurrent.futures.Future[Any]


class BridgeError(Exception):
    """An unexpected failure inside the bridge; the message says what it was."""


def error_of(kind: str, message: str, hint: str | None) -> BaseException:
    if kind == "link":
        return LinkLost(message)
    if kind == "gone":
        return NodeGone(message)
    if kind == "user":
        return UserError(message, hint=hint)
    if kind == "unavailable":
        return AgentUnavailable(message, hint=hint)
    return BridgeError(message)


class _Connection:
    """One open socket to the bridge and the calls waiting on it."""

    def __init__(self, sock: socket.socket, info: dict[str, Any]) -> None:
        self.sock = sock
        self.pid = int(info.get("pid") or 0)
        sock.settimeout(SEND_TIMEOUT_S)
        self._lock = threading.Lock()
        self._pending: dict[int, tuple[Pending, float, float, str]] = {}
        self._ids = itertools.count(1)
        self._heard = time.monotonic()
        self.dead = ""
        threading.Thread(target=self._read_loop, name="ray-bridge-reader", daemon=True).start()

    def request(self, op: str, args: tuple[Any, ...], within: float, what: str) -> Pending:
        future: Pending = concurrent.futures.Future()
        with self._lock:
            call_id = next(self._ids)
        data = _encoded([op, call_id, *args])  # outside the lock: a bundle takes a while
        with self._lock:
            if self.dead:
                future.set_exception(LinkLost(self.dead))
                return future
            now = time.monotonic()
            self._pending[call_id] = (future, now, now + within, what)
            failed = self._send_locked(data)
        if failed:
            self.close(failed)
        return future

    def send(self, op: str, args: tuple[Any, ...]) -> None:
        data = _encoded([op, 0, *args])
        with self._lock:
            failed = "" if self.dead else self._send_locked(data)
        if failed:
            self.close(failed)

    def _send_locked(self, data: bytes) -> str:
        try:
            self.sock.settimeout(SEND_TIMEOUT_S + len(data) / 2**20)  # 1 s more per MiB
            self.sock.sendall(data)
        except OSError as exc:
            return f"sending to the Ray bridge failed: {exc}"
        return ""

    def close(self, why: str) -> None:
        with self._lock:
            if self.dead:
                return
            self.dead = why
            pending, self._pending = self._pending, {}
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            log.debug("the bridge socket was closed already")
        self.sock.close()
        for future, *_ in pending.values():
            future.set_exception(LinkLost(why))

    def _read_loop(self) -> None:
        buffer = bytearray()
        try:
            while not self.dead:
                if select.select([self.sock], [], [], 1.0)[0]:
                    chunk = self.sock.recv(1 << 20)
                    if not chunk:
                        self.close(f"the Ray bridge (pid {self.pid}) closed the connection")
                        return
                    self._heard = time.monotonic()
                    buffer += chunk
                    self._take_frames(buffer)
                self._expire()
        except (OSError, ValueError) as exc:  # ValueError: select on a closed socket
            self.close(f"the connection to the Ray bridge broke: {exc}")
        except WireError as exc:
            self.close(f"the Ray bridge sent a bad frame: {exc}")

    def _take_frames(self, buffer: bytearray) -> None:
        while len(buffer) >= HEADER.size:
            size = body_length(bytes(buffer[: HEADER.size]))
            if len(buffer) < HEADER.size + size:
                return
            message = decode(bytes(buffer[HEADER.size : HEADER.size + size]))
            del buffer[: HEADER.size + size]
            self._settle(message)

    def _settle(self, message: Any) -> None:
        if not isinstance(message, list) or len(message) < 3 or message[0] not in ("ok", "err"):
            raise WireError(f"not an answer: {message!r:.100}")
        with self._lock:
            entry = self._pending.pop(message[1], None)
        if entry is None:
            return  # answered after its deadline, or a bad frame the bridge refused
        if message[0] == "ok":
            entry[0].set_result(message[2])
        else:
            kind, text, hint = [*message[2:], None, None, None][:3]
            entry[0].set_exception(error_of(str(kind), str(text), hint))

    def _expire(self) -> None:
        now = time.monotonic()
        with self._lock:
            late = {k: v for k, v in self._pending.items() if v[2] <= now}
            for k in late:
                del self._pending[k]
        stuck = any(sent >= self._heard for _, sent, _, _ in late.values())
        for future, sent, _, what in late.values():
            future.set_exception(
                LinkLost(f"the Ray bridge did not answer `{what}` within {now - sent:.0f}s")
            )
        if stuck:
            self.close(f"the Ray bridge (pid {self.pid}) has said nothing since a call it left")


def _encoded(message: list[Any]) -> bytes:
    try:
        return frame(message)
    except WireError as exc:  # a bundle over the cap, say: nothing was sent
        raise UserError(
            f"cannot send to the Ray bridge: {exc}",
            hint='use workspace = "shared" for a tree this large, or connection = "direct"',
        ) from None


class BridgeLink:
    """This process's way to one cluster's bridge: connected on first use, and again after
    the bridge is gone (starting a new one)."""

    def __init__(
        self,
        key: BridgeKey,
        *,
        timeout: float,
        idle_s: float = DEFAULT_IDLE_S,
        command: Command = ray_bridge_command,
    ) -> None:
        self.key, self.timeout, self.idle_s, self._command = key, timeout, idle_s, command
        self._lock = threading.Lock()
        self._conn: _Connection | None = None

    def request(self, op: str, *args: Any, within: float, what: str = "") -> Pending:
        """A call's future; AgentUnavailable now if no bridge can be reached or started."""
        return self._connection().request(op, args, within, what or op)

    def send(self, op: str, *args: Any) -> None:
        """A message without an answer; dropped (logged) if no bridge can be reached."""
        try:
            self._connection().send(op, args)
        except AgentUnavailable as exc:
            log.warning("the Ray bridge is unreachable; %s not sent: %s", op, exc.one_line())

    def call_sync(self, op: str, *args: Any, within: float) -> Any:
        return self.request(op, *args, within=within).result(within + SYNC_GRACE_S)

    def bridge_pid(self) -> int:
        """The bridge's pid (connecting, or starting one, if need be)."""
        return self._connection().pid

    def _connection(self) -> _Connection:
        with self._lock:
            if self._conn is not None and not self._conn.dead:
                return self._conn
            if not self.key.address.startswith("ray://"):
                probe(self.key.address, self.timeout)  # no cluster: say so before any start
            error: AgentUnavailable | None = None
            for _ in range(CONNECT_TRIES):
                home = Home()
                try:
                    sock, info = connect_or_start(
                        self.key,
                        home,
                        timeout=self.timeout,
                        idle_s=self.idle_s,
                        command=self._command,
                    )
                    self._conn = _Connection(sock, info)
                    return self._conn
                except AgentUnavailable as exc:
                    error = exc
                finally:
                    home.close()
            assert error is not None
            raise error

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close("closed by this process")


class BridgeNodeClient:
    """Calls to one node's actor through the bridge (the `NodeClient` of remote.py)."""

    def __init__(self, link: BridgeLink, node_id: str, ip: str, root: str) -> None:
        self.node_id, self.ip = node_id, ip
        self.name = describe_node(node_id, ip)
        self._link = link
        self._node = [node_id, ip, root]

    def call(self, method: str, *args: Any) -> Pending:
        return self._call(method, args, CALL_REPLY_S)

    def _call(self, method: str, args: tuple[Any, ...], within: float) -> Pending:
        try:
            return self._link.request(
                "call", self._node, method, list(args), within=within, what=method
            )
        except AgentUnavailable as exc:
            failed: Pending = concurrent.futures.Future()
            failed.set_exception(NodeGone(f"the {self.name} cannot be reached: {exc.one_line()}"))
            return failed

    def wait(self, pending: Pending, timeout: float) -> bool:
        done, _ = concurrent.futures.wait([pending], timeout=max(0.0, timeout))
        return bool(done)

    def result(self, pending: Pending, timeout: float | None = None) -> Any:
        return pending.result(timeout)

    def fire(self, method: str, *args: Any) -> None:
        try:
            self._link.send("fire", self._node, method, list(args))
        except UserError:
            log.exception("a fired %s could not be sent", method)

    def reap(self) -> None:
        return None  # the bridge collects fired calls itself

    def call_sync(self, method: str, *args: Any, timeout: float = 60.0) -> Any:
        try:
            return self.result(self._call(method, args, timeout + SYNC_GRACE_S), timeout)
        except TimeoutError:
            raise AgentUnavailable(
                f"the {self.name} did not answer `{method}` within {timeout:g}s",
                hint="the node (or this machine) is overloaded: run fewer jobs at once",
            ) from None


class BridgePlacement:
    """A job's node, and its reservation held by the bridge for this connection."""

    def __init__(self, link: BridgeLink, placed: Mapping[str, Any], root: str) -> None:
        self.client = BridgeNodeClient(link, str(placed["node_id"]), str(placed["ip"]), root)
        self.node = self.client.name
        self.node_id = self.client.node_id
        self._link = link
        self._group = placed.get("group")

    def release(self) -> None:
        group, self._group = self._group, None
        if group:
            self._link.send("release", group)


_links: dict[BridgeKey, BridgeLink] = {}
_links_lock = threading.Lock()


def link_for(settings: Mapping[str, Any]) -> BridgeLink:
    """This process's link to the bridge of the settings' cluster (one per cluster)."""
    address, namespace, timeout = options_of(settings)
    key = BridgeKey(resolve_address(address), namespace)
    with _links_lock:
        if key not in _links:
            idle = float(settings.get("bridge_idle_s", DEFAULT_IDLE_S))
            _links[key] = BridgeLink(key, timeout=timeout, idle_s=idle)
        return _links[key]


class BridgeConnector:
    """Places jobs through the machine's shared connection (the `Connector` of job.py)."""

    def place(self, job_key: str, settings: Mapping[str, Any]) -> BridgePlacement:
        link = link_for(settings)
        within = float(settings.get("schedule_timeout_s", 120.0)) + link.timeout
        placed = self._ask(link, "place", job_key, within, settings)
        return BridgePlacement(link, placed, str(settings.get("node_root") or ""))

    def attach(self, node_id: str, settings: Mapping[str, Any]) -> BridgePlacement:
        link = link_for(settings)
        placed = self._ask(link, "attach", node_id, link.timeout, settings)
        return BridgePlacement(link, placed, str(settings.get("node_root") or ""))

    @staticmethod
    def _ask(
        link: BridgeLink, op: str, what: str, within: float, settings: Mapping[str, Any]
    ) -> Any:
        for attempt in range(2):  # a bridge that died mid-place freed what it had placed
            try:
                return link.call_sync(op, what, dict(settings), within=within)
            except LinkLost as exc:
                if attempt:
                    raise AgentUnavailable(
                        f"the Ray bridge was lost twice placing the job: {exc}"
                    ) from None
                log.warning("the Ray bridge was lost placing %s, asking again: %s", what, exc)
            except TimeoutError:
                raise AgentUnavailable(
                    f"the Ray bridge did not place the job within {within + SYNC_GRACE_S:g}s",
                    hint="the cluster (or this machine) is overloaded: run fewer jobs at once",
                ) from None
        raise Bug("placing a job through the bridge fell out of its loop")
