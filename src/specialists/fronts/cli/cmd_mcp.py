"""`specialists mcp`: serve the MCP control plane on stdio, or with --http over streamable HTTP."""

from __future__ import annotations

TYPE_CHECKING = False  # an MCP client waits for this start: `typing` and argparse are not free
if TYPE_CHECKING:
    import argparse

    from specialists.fronts.mcp.handlers import ServerContext
    from specialists.project import Project


HTTP_PORT = 8766
TOOLSETS = ("all", "core", "more")  # mcp/table.py TOOLSETS (not imported: it is heavy)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "mcp",
        help="run the MCP server on stdio (for Claude Code, Codex, pi and other MCP clients)",
        description=(
            "Serve the specialists tools over MCP on stdin/stdout. Register it with your "
            "client, e.g. `claude mcp add specialists -- specialists mcp` (`specialists "
            "init` does it for Claude Code). With --http, serve them over streamable HTTP "
            "at /mcp for a client on another machine, behind a bearer token "
            "($SPECIALISTS_MCP_TOKEN, else a random one printed at start)."
        ),
    )
    p.add_argument(
        "--tools",
        choices=TOOLSETS,
        default="all",
        help="which tools: core (dispatch, read, control: what a model needs on every "
        "request), more (everything else) or all (the default)",
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
    from specialists.base.errors import UserError

    if args.job is not None:
        if args.http:
            raise UserError("--job serves one job's agent on stdio", hint="drop --http")
        if args.tools != "all":
            raise UserError("--job serves that job's own tools", hint="drop --tools")
        return serve_stdio("all", args.job, project)
    if args.http:
        from specialists.fronts.mcp.http import serve_http

        host = args.host or "127.0.0.1"
        port = HTTP_PORT if args.port is None else args.port
        return serve_http(_context(project, toolset=args.tools), host, port)
    if args.host is not None or args.port is not None:
        raise UserError("--host and --port need --http", hint="stdio has no address")
    return serve_stdio(args.tools, None, project)


def serve_stdio(toolset: str, job: str | None, project: Project | None = None) -> int:
    """The stdio server (also the CLI's fast path, which skips argparse: cli/main.py
    mcp_stdio_args). The project is opened in the server's loader, after its first answer,
    except for a job's server, which checks its job first."""
    from specialists.fronts.mcp.stdio import serve

    scope = None
    if job is not None:
        project = project or _open_project()
        scope = _scoped_job(project, job)

    def make_context() -> ServerContext:
        return _context(project or _open_project(), toolset=toolset, job_scope=scope)

    return serve(make_context, toolset if job is None else None)


def _open_project() -> Project:
    from specialists.project import Project

    return Project()


def _context(
    project: Project, *, toolset: str = "all", job_scope: str | None = None
) -> ServerContext:
    from specialists.fronts.mcp.handlers import ServerContext

    return ServerContext(project=project, toolset=toolset, job_scope=job_scope)


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
