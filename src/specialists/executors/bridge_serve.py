"""The shared Ray connection's server: one process per user and cluster, the only Ray driver.

Supervisors reach it over a Unix socket in the private directory (bridge_home.py) and speak
frames (bridge_wire.py). A request is `[op, id, *args]`; a reply is `["ok", id, value]` or
`["err", id, kind, message, hint]`, in any order (each call is its own task: a read that waits
on its node never holds up another job's write). The ops are exactly the node-client calls
(remote.py) and what placing a job needs:

    hello                           -> {pid, version, protocol}
    call  node method args          -> the node actor's answer        node = [id, ip, root]
    fire  node method args          (no reply; its errors are logged here)
    place job_key settings          -> {node_id, ip, group}
    attach node_id settings         -> {node_id, ip}
    release group                   (no reply)
    stats                           -> {clients, rss_bytes}

A client's placement groups are released when its socket closes, however the client died.
With no client for `idle_s` the bridge ends; it ends too when its backend says the cluster
connection is lost (its clients get LinkLost and the next call starts a new bridge). Before
it ends it removes its own socket under the start lock, so a client never meets a bridge
that is going away without being told.

The Ray side is a `Backend` (bridge_ray.py; a loopback one beside the tests), so this
module does not import Ray.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from specialists.base.errors import SpecialistsError, UserError
from specialists.base.procstat import rss_bytes
from specialists.executors.bridge_home import Home, peer_of
from specialists.executors.bridge_wire import (
    HEADER,
    PROTOCOL,
    WireError,
    body_length,
    decode,
    frame,
)
from specialists.executors.remote import LinkLost, NodeGone

log = logging.getLogger(__name__)

# The node actor's methods (ray_actor.py): nothing else is called through the bridge.
METHODS = frozenset(
    {
        *("info", "stats", "start", "read", "adopt", "write", "close_stdin", "signal"),
        *("kill", "forget", "has_commit", "stage", "sync_files", "collect", "cleanup"),
    }
)
THREADS = 128  # blocking Ray calls (placing a job can wait for its resources)
BACKLOG = 1024


class Backend(Protocol):
    async def place(self, job_key: str, settings: dict[str, Any]) -> dict[str, Any]: ...

    async def attach(self, node_id: str, settings: dict[str, Any]) -> dict[str, Any]: ...

    async def release(self, group: str) -> None: ...

    async def call(self, node: list[str], method: str, args: list[Any]) -> Any: ...

    def lost(self) -> bool:
        """Whether the cluster connection is gone (the bridge then ends)."""
        ...


def error_reply(call_id: int, exc: BaseException) -> list[Any]:
    """The `err` frame for `exc`: a kind the client turns back into the same exception."""
    if isinstance(exc, LinkLost):
        return ["err", call_id, "link", str(exc), None]
    if isinstance(exc, NodeGone):
        return ["err", call_id, "gone", str(exc), None]
    if isinstance(exc, SpecialistsError):
        kind = "user" if isinstance(exc, UserError) else "unavailable"
        return ["err", call_id, kind, exc.message, exc.hint]
    first = (str(exc).strip().splitlines() or [""])[0][:500]
    return ["err", call_id, "error", f"{type(exc).__name__}: {first}", None]


class _Client:
    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.groups: set[str] = set()
        self.tasks: set[asyncio.Task[None]] = set()
        self.closed = False

    def send(self, message: list[Any]) -> None:
        if self.closed:
            return
        try:
            data = frame(message)
        except WireError as exc:  # an answer too large to send: say so instead
            data = frame(error_reply(int(message[1]), exc))
        self.writer.write(data)


class BridgeServer:
    def __init__(self, backend: Backend, home: Home, name: str, *, idle_s: float) -> None:
        self.backend = backend
        self.home = home
        self.name = name
        self.idle_s = idle_s
        self.clients: set[_Client] = set()
        self._stop = asyncio.Event()
        self._idle: asyncio.TimerHandle | None = None
        self._socket_ino = 0

    async def serve(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor(THREADS, thread_name_prefix="bridge"))
        self._socket_ino = os.stat(self.name + ".sock", dir_fd=self.home.fd).st_ino
        server = await asyncio.start_unix_server(self._serve_client, sock=listener)
        self._arm_idle()
        while True:
            await self._stop.wait()
            if await asyncio.to_thread(self._withdraw):
                break
            self._stop.clear()  # a client came while the bridge was about to end
        server.close()
        for client in list(self.clients):
            client.closed = True
            client.writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 5.0)

    def _withdraw(self) -> bool:
        """Remove our socket under the start lock, unless a client came meanwhile."""
        from specialists.executors.bridge_start import start_lock

        with start_lock(self.home, self.name, timeout=60.0):
            if self.clients and not self.backend.lost():
                return False
            with contextlib.suppress(FileNotFoundError):
                if os.stat(self.name + ".sock", dir_fd=self.home.fd).st_ino == self._socket_ino:
                    os.unlink(self.name + ".sock", dir_fd=self.home.fd)
            return True

    def _arm_idle(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
        self._idle = asyncio.get_running_loop().call_later(self.idle_s, self._stop.set)

    async def _serve_client(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        sock = writer.get_extra_info("socket")
        if sock is None or peer_of(sock)[1] != os.geteuid():
            log.warning("refused a client of another user")
            writer.close()
            return
        client = _Client(writer)
        self.clients.add(client)
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        try:
            while True:
                header = await reader.readexactly(HEADER.size)
                body = await reader.readexactly(body_length(header))
                self._dispatch(client, decode(body))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client is gone (or died): what it held is let go below
        except WireError as exc:
            log.warning("a client sent a bad frame, closing it: %s", exc)
            client.send(["err", 0, "user", f"bad frame: {exc}", None])
        finally:
            client.closed = True
            self.clients.discard(client)
            for task in client.tasks:
                task.cancel()
            for group in client.groups:
                await self._release(group)
            writer.close()
            if not self.clients:
                self._arm_idle()

    def _dispatch(self, client: _Client, message: Any) -> None:
        if not isinstance(message, list) or len(message) < 2 or not isinstance(message[1], int):
            raise WireError("a request is [op, id, ...]")
        op, call_id, args = message[0], message[1], message[2:]
        if op == "fire" and len(args) == 3:
            self._spawn(client, self._fire(*args))
        elif op == "release" and len(args) == 1:
            if args[0] in client.groups:
                client.groups.discard(args[0])
                self._spawn(client, self._release(args[0]))
        else:
            self._spawn(client, self._answer(client, call_id, op, args))

    def _spawn(self, client: _Client, work: Any) -> None:
        task = asyncio.ensure_future(work)
        client.tasks.add(task)
        task.add_done_callback(client.tasks.discard)

    async def _answer(self, client: _Client, call_id: int, op: Any, args: list[Any]) -> None:
        try:
            value = await self._run(client, op, args)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # every failure goes back to the caller, as one frame
            if not isinstance(exc, (LinkLost, NodeGone, SpecialistsError)):
                log.exception("bridge op %r failed", op)
            client.send(error_reply(call_id, exc))
        else:
            client.send(["ok", call_id, value])
        if self.backend.lost():
            self._stop.set()

    async def _run(self, client: _Client, op: Any, args: list[Any]) -> Any:
        if op == "call" and len(args) == 3:
            node, method, call_args = args
            _check_call(node, method, call_args)
            return await self.backend.call(node, method, call_args)
        if op == "place" and len(args) == 2 and isinstance(args[1], dict):
            placed = await self.backend.place(str(args[0]), args[1])
            group = placed.get("group")
            if group and client.closed:  # its supervisor died while the job was placed
                await self._release(group)
            elif group:
                client.groups.add(group)
            return placed
        if op == "attach" and len(args) == 2 and isinstance(args[1], dict):
            return await self.backend.attach(str(args[0]), args[1])
        if op == "hello":
            from specialists import __version__

            return {"pid": os.getpid(), "version": __version__, "protocol": PROTOCOL}
        if op == "stats":
            return {"clients": len(self.clients), "rss_bytes": rss_bytes()}
        raise UserError(f"the Ray bridge has no op {op!r} with {len(args)} arguments")

    async def _fire(self, node: Any, method: Any, args: Any) -> None:
        try:
            _check_call(node, method, args)
            await self.backend.call(node, method, args)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # nobody waits for a fired call; a dead node shows in reads
            log.info("fired %r failed: %s", method, exc, exc_info=True)
        if self.backend.lost():
            self._stop.set()

    async def _release(self, group: str) -> None:
        try:
            await self.backend.release(group)
        except Exception:
            log.exception("releasing placement group %s failed", group)


def _check_call(node: Any, method: Any, args: Any) -> None:
    if not (isinstance(node, list) and len(node) == 3 and all(isinstance(x, str) for x in node)):
        raise UserError("a call names its node as [id, ip, root]")
    if method not in METHODS or not isinstance(args, list):
        raise UserError(f"the node actor has no method {method!r}")


def run_bridge(argv: list[str], make_backend: Callable[[dict[str, str]], Backend]) -> int:
    """The bridge process: `--dir D --name N --idle S [key value ...]`; make the backend
    (connect), listen, say `ready` on stdout (the starter waits for that line), serve."""
    options = dict(zip(argv[0::2], argv[1::2], strict=False))
    os.umask(0o077)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s")
    try:
        from pathlib import Path

        home = Home(Path(options["--dir"]))
        name = options["--name"]
        backend = make_backend(options)
        home.remove_stale(name + ".sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(home.at(name + ".sock"))
        listener.listen(BACKLOG)
    except (SpecialistsError, OSError, KeyError) as exc:
        text = exc.one_line() if isinstance(exc, SpecialistsError) else str(exc)
        print(f"error: {text}", flush=True)
        return 1
    print("ready", flush=True)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # the starter is done reading; later prints must not block on it
    os.close(devnull)
    server = BridgeServer(backend, home, name, idle_s=float(options.get("--idle", "120")))
    asyncio.run(server.serve(listener))
    return 0
