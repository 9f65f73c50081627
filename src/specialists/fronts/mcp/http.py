"""`specialists mcp --http`: the same tools over the SDK's streamable HTTP transport.

For a client on another machine (a team sharing one project's jobs). Every request carries
`Authorization: Bearer <token>`, compared in constant time; anything else gets 401 before
the SDK sees it. The token is `$SPECIALISTS_MCP_TOKEN` when set (a team shares one; at least
16 characters), else a fresh random one per run, printed with the URL. The socket is bound
by `web/server.py`'s `bind` (one clear line for a port in use) on loopback unless `--host`
says otherwise; on loopback the SDK's DNS-rebinding protection stays on.

The stdio server is our own (stdio.py): a client waits for its start, and the SDK's import
costs seconds under load. Over HTTP the SDK's streamable transport, sessions and
DNS-rebinding protection are worth that one start.
"""

from __future__ import annotations

import hmac
import os
import sys
import threading
from typing import Any

from specialists.base.errors import UserError
from specialists.fronts.mcp.handlers import ServerContext

TOKEN_ENV = "SPECIALISTS_MCP_TOKEN"
MIN_TOKEN_CHARS = 16
PATH = "/mcp"
UNAUTHORIZED = b"unauthorized: send Authorization: Bearer <the token specialists mcp printed>\n"


def chosen_token(env: dict[str, str] | os._Environ[str]) -> str:
    from specialists.fronts.web.server import new_token

    token = env.get(TOKEN_ENV, "")
    if not token:
        return new_token()
    if len(token) < MIN_TOKEN_CHARS or not token.isprintable() or " " in token:
        raise UserError(
            f"{TOKEN_ENV} must be at least {MIN_TOKEN_CHARS} printable characters, no spaces",
            hint="unset it for a random token per run",
        )
    return token


class BearerGate:
    """ASGI middleware: only requests with the bearer token reach the MCP app."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)  # lifespan: starts the session manager
            return
        given = b""
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                given = value
                break
        if hmac.compare_digest(given, self._expected):
            await self.app(scope, receive, send)
            return
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"www-authenticate", b'Bearer realm="specialists"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": UNAUTHORIZED})


def build_app(ctx: ServerContext, token: str, host: str) -> Any:
    from mcp.server.transport_security import TransportSecuritySettings

    from specialists.fronts.web.server import is_loopback

    # Off the loopback the Host header is whatever name the team uses for this machine;
    # the bearer token is what keeps strangers out there.
    security = (
        None
        if is_loopback(host)
        else TransportSecuritySettings(enable_dns_rebinding_protection=False)
    )
    app = build_server(ctx).streamable_http_app(
        streamable_http_path=PATH, host=host, transport_security=security
    )
    return BearerGate(app, token)


def serve_http(ctx: ServerContext, host: str, port: int) -> int:
    """Serve until Ctrl-C or SIGTERM; jobs this server runs itself are stopped on the way out."""
    from specialists.fronts.mcp.stdio import SHUTDOWN_GRACE_S
    from specialists.fronts.web.server import bind, is_loopback, run_app

    token = chosen_token(os.environ)
    sock = bind(host, port)
    if not is_loopback(host):
        print(
            f"warning: serving MCP on {host}, not loopback: anyone who can reach this machine "
            "and holds the token can run and stop jobs here",
            file=sys.stderr,
        )
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{sock.getsockname()[1]}{PATH}"
    print(f"specialists mcp: {url}", flush=True)
    if TOKEN_ENV in os.environ:
        print(f"token: from ${TOKEN_ENV}", flush=True)
    else:
        print(f"token: {token}", flush=True)
    print("send Authorization: Bearer <token>; Ctrl-C stops it", file=sys.stderr, flush=True)
    try:
        run_app(build_app(ctx, token, host), sock, lifespan=True)  # lifespan: the SDK's sessions
    finally:
        stopped = ctx.jobs.stop_all(SHUTDOWN_GRACE_S)
        if stopped:
            print(f"specialists mcp: stopped jobs {', '.join(stopped)}", file=sys.stderr)
    print("specialists mcp: stopped", file=sys.stderr)
    return 0


def build_server(ctx: ServerContext | None = None) -> Any:
    """A low-level `mcp.server.Server` serving the tool table with `ctx` (2.x). Its handlers
    block (file reads, synchronous jobs), so each call runs in a worker thread."""
    import anyio
    import mcp.types as types
    from mcp.server import Server
    from mcp.shared.exceptions import MCPError

    from specialists import __version__
    from specialists.fronts.mcp import table
    from specialists.fronts.mcp.stdio import INSTRUCTIONS, SERVER_NAME

    context = ctx or ServerContext()
    context.keys()  # the client's owner, found once (calls work on copies of the context)
    tools = [types.Tool.model_validate(tool) for tool in table.wire_listing(context)]

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def handle_call(req: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        cancelled = threading.Event()  # tells a waiting `events` call to take nothing

        def call() -> table.ToolOutcome:
            call_id = f"mcp-{getattr(req, 'request_id', None) or id(cancelled)}"
            return table.call_tool(
                context, params.name, arguments, call_id=call_id, cancelled=cancelled
            )

        try:
            # Abandoned on cancellation: a synchronous job then ends with the server (stop_all).
            outcome = await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
        except table.UnknownTool as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=exc.one_line()) from exc
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        return types.CallToolResult.model_validate(table.wire_result(params.name, outcome))

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=handle_call,
    )
