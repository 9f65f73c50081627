"""Bind, print the URL, serve until Ctrl-C. The one place that touches sockets and uvicorn.

The socket is bound here, before uvicorn starts, so a port in use is one clear error line
rather than a log record, and the printed URL carries the port actually bound (`--port 0`).
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import sys
from typing import Any

from specialists.base.errors import UserError
from specialists.store.jobs import JobStore

TOKEN_BYTES = 24  # 32 URL-safe characters


def new_token() -> str:
    import base64

    return base64.urlsafe_b64encode(os.urandom(TOKEN_BYTES)).decode().rstrip("=")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on (host, port), or a UserError that names the problem."""
    if not 0 <= port <= 65535:
        raise UserError(f"port {port} is out of range", hint="use 1-65535, or 0 for any free port")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UserError(f"cannot serve on host {host!r}: {exc.strerror}") from exc
    except UnicodeError as exc:  # a name idna cannot encode: a label over 63 characters
        raise UserError(f"cannot serve on host {host[:80]!r}: not a valid host name") from exc
    family, kind, proto, _, address = infos[0]
    try:
        sock = socket.socket(family, kind, proto)
    except OSError as exc:  # an address family this machine lacks (IPv6 turned off)
        raise UserError(f"cannot serve on host {host!r}: {exc.strerror}") from exc
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UserError(
                f"port {port} on {host} is in use",
                hint="stop what holds it, or pick another with --port (0: any free port)",
            ) from exc
        if exc.errno == errno.EACCES:
            raise UserError(
                f"no permission to listen on port {port}", hint="use a port above 1023"
            ) from exc
        if exc.errno == errno.EADDRNOTAVAIL:
            raise UserError(f"{host} is not an address of this machine") from exc
        raise UserError(f"cannot serve on host {host!r}: {exc.strerror}") from exc
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket, host: str, token: str) -> str:
    port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/?token={token}"


def serve(store: JobStore, host: str, port: int) -> int:
    from specialists.fronts.web.app import build_app

    sock = bind(host, port)
    token = new_token()
    if not is_loopback(host):
        print(
            f"warning: serving on {host}, not loopback: anyone who can reach this machine and "
            "learns the URL can read every job's prompt and output",
            file=sys.stderr,
        )
    print(f"specialists web: {url_of(sock, host, token)}", flush=True)
    print("read-only dashboard; Ctrl-C stops it", file=sys.stderr, flush=True)
    run_app(build_app(store, token), sock, lifespan=False)
    print("specialists web: stopped", file=sys.stderr)
    return 0


def run_app(app: Any, sock: socket.socket, *, lifespan: bool) -> None:
    """Serve the ASGI `app` on the bound `sock` with uvicorn until Ctrl-C or SIGTERM."""
    import uvicorn

    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="on" if lifespan else "off",
        timeout_graceful_shutdown=2,
        server_header=False,
    )
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # uvicorn re-raises the Ctrl-C it handled; for a server that is how it stops
