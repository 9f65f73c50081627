"""`specialists web`: a read-only dashboard in the browser, on loopback, behind a token."""

from __future__ import annotations

import argparse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from specialists.project import Project

DEFAULT_PORT = 8765  # web/server.py holds the same number; kept here to keep --help light


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "web",
        help="read-only dashboard in the browser (fleet, live feeds, timelines, cost)",
        description=(
            "Serve a read-only dashboard on 127.0.0.1. The URL printed at start carries a "
            "random token made for this run; requests without it are refused (403)."
        ),
    )
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (0: any free port)")
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default loopback; anything else is warned about)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace, project: Project) -> int:
    from specialists.fronts.web.server import serve

    return serve(project.store, args.host, args.port)
