"""`specialists mcp`: serve the MCP control plane on stdio, or with --http over streamable HTTP."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specialists.project import Project


HTTP_PORT = 8766


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "mcp",
        help="run the MCP server on stdio (for Claude Code, Codex, pi and other MCP clients)",
        description=(
            "Serve the specialists tools over MCP on stdin/stdout. Register it with your "
            "client, e.g. `claude mcp add specialists -- specialists mcp`. With --http, serve "
            "them over streamable HTTP at /mcp for a client on another machine, behind a bearer "
            "token ($SPECIALISTS_MCP_TOKEN, else a random one printed at start)."
        ),
    )
    p.add_argument("--http", action="store_true", help="serve over streamable HTTP, not stdio")
    p.add_argument("--host", help="with --http: the address to serve on (default 127.0.0.1)")
    p.add_argument("--port", type=int, help=f"with --http: the port (default {HTTP_PORT}; 0: any)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, project: Project) -> int:
    from specialists.mcp.handlers import ServerContext

    if args.http:
        from specialists.mcp.http import serve_http

        host = args.host or "127.0.0.1"
        port = HTTP_PORT if args.port is None else args.port
        return serve_http(ServerContext(project=project), host, port)
    if args.host is not None or args.port is not None:
        from specialists.errors import UserError

        raise UserError("--host and --port need --http", hint="stdio has no address")
    from specialists.mcp.server import serve_stdio

    return serve_stdio(ServerContext(project=project))
