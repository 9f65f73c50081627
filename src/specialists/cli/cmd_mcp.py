"""`specialists mcp`: serve the MCP control plane on stdio (the only importer of `mcp`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specialists.project import Project


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "mcp",
        help="run the MCP server on stdio (for Claude Code, Codex, pi and other MCP clients)",
        description=(
            "Serve the specialists tools over MCP on stdin/stdout. Register it with your "
            "client, e.g. `claude mcp add specialists -- specialists mcp`."
        ),
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace, project: Project) -> int:
    from specialists.mcp.handlers import ServerContext
    from specialists.mcp.server import serve_stdio

    del args
    return serve_stdio(ServerContext(project=project))
