"""`specialists sidecar --owner KEY [--cwd DIR]`: the pi extension's helper process.

Started by the pi extension (pi_extension/index.ts), one per pi session; speaks JSON lines on
stdin and stdout (protocol in pi_extension/sidecar.py). Not meant to be run by hand, but a
person can: type `{"id": 1, "op": "hello"}`. Log lines go to stderr, which the extension
keeps in its log file. Exit 0 when stdin closes; 2 for a bad owner or cwd.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specialists.project import Project


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sidecar", help="helper process of the pi extension (JSON lines on stdio)")
    p.add_argument("--owner", required=True, help="owner key: job-<id> or pi-<session id>")
    p.add_argument("--cwd", default=None, help="the pi session's working directory")
    p.add_argument(
        "--parent-pid",
        type=int,
        default=None,
        help="pi's pid: the sidecar ends when that process is gone (default: our parent)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace, project: Project) -> int:
    import logging
    import sys
    from pathlib import Path

    from specialists.base.errors import UserError
    from specialists.events.owners import check_owner
    from specialists.fronts.pi.ops import Front
    from specialists.fronts.pi.sidecar import Sidecar, parent_watch
    from specialists.store.paths import find_project_root
    from specialists.store.paths import state_dir as state_dir_of

    owner = check_owner(args.owner)
    cwd = Path(args.cwd or ".").resolve()
    if not cwd.is_dir():
        raise UserError(f"--cwd {cwd} is not a directory")
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO,
        format="%(asctime)s sidecar %(levelname)s: %(message)s",
    )
    # The pi session's own directory decides the project (pi may run elsewhere than we do).
    store_root = (
        project.store.root if args.cwd is None else state_dir_of(Path(find_project_root(cwd)))
    )
    front = Front(store_root, owner, cwd)
    watch = parent_watch(args.parent_pid)
    return Sidecar(front, sys.stdin.buffer, sys.stdout.buffer, parent_alive=watch).run()
