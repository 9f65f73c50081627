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
    p.add_argument(
        "--job",
        metavar="ID",
        help="serve one job's agent (stdio): only its agent tools, acting as that job "
        "(how a Claude Code or Codex thread gets report_to_parent and close_thread)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace, project: Project) -> int:
    from specialists.fronts.mcp.handlers import ServerContext

    if args.job is not None:
        if args.http:
            from specialists.base.errors import UserError

            raise UserError("--job serves one job's agent on stdio", hint="drop --http")
        from specialists.fronts.mcp.server import serve_stdio

        return serve_stdio(ServerContext(project=project, job_scope=_scoped_job(project, args.job)))
    if args.http:
        from specialists.fronts.mcp.http import serve_http

        host = args.host or "127.0.0.1"
        port = HTTP_PORT if args.port is None else args.port
        return serve_http(ServerContext(project=project), host, port)
    if args.host is not None or args.port is not None:
        from specialists.base.errors import UserError

        raise UserError("--host and --port need --http", hint="stdio has no address")
    from specialists.fronts.mcp.server import serve_stdio

    return serve_stdio(ServerContext(project=project))


def _scoped_job(project: Project, job_id: str) -> str:
    """The full id of an existing job, or one clear refusal (never a prefix: a job's agent
    is told its exact id, and a prefix could name another job later)."""
    from specialists.base.errors import SpecialistsError, UserError
    from specialists.store.ids import is_job_id

    if not is_job_id(job_id):
        raise UserError(f"--job {job_id[:40]!r} is not a job id", hint="8 hex characters")
    try:
        project.store.read_record(job_id)
    except (OSError, SpecialistsError) as exc:
        raise UserError(
            f"--job {job_id}: no such job in {project.store.root}",
            hint="the job's supervisor passes its own id and SPECIALISTS_PROJECT_ROOT",
        ) from exc
    return job_id
