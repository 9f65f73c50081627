"""`specialists install` / `uninstall`: register with Claude Code, or undo exactly that.

install (project): .specialists/ + .gitignore entry (as `init`), the MCP server in
.mcp.json and the two hooks in .claude/settings.json. `--user` writes the user-level files
instead (~/.claude.json and ~/.claude/settings.json). Both are idempotent and merge: entries
a user wrote are never changed. A file that is not valid JSON is refused, untouched.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specialists.project import Project


def add_parser(sub: argparse._SubParsersAction) -> None:
    for name, text in (
        ("install", "register the MCP server and hooks with Claude Code"),
        ("uninstall", "remove exactly what `install` added (job data stays)"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument(
            "--user", action="store_true", help="the user-level files, not this project's"
        )
        p.add_argument(
            "--dry-run", action="store_true", help="say what would change, change nothing"
        )
        p.add_argument(
            "--pi",
            action="store_true",
            help="the pi extension (pi's settings.json), not Claude Code",
        )
        p.set_defaults(run=run, install_action=name)


def run(args: argparse.Namespace, project: Project) -> int:
    from specialists.fronts import install

    if args.pi:
        return _run_pi(args)
    if args.user:
        targets = install.user_targets()
        lines: list[str] = []
    else:
        root = project.root
        targets = install.project_targets(root)
        lines = []
        if args.install_action == "install" and not args.dry_run:
            from specialists.fronts.cli.cmd_init import init_project

            lines += init_project(root)
    if args.install_action == "install":
        lines += install.install(targets, dry_run=args.dry_run)
    else:
        lines += install.uninstall(targets, dry_run=args.dry_run)
        if not args.user:
            lines.append("kept .specialists/ (job data) and its .gitignore entry")
    for line in lines:
        print(line)
    return 0


def _run_pi(args: argparse.Namespace) -> int:
    from pathlib import Path

    from specialists.fronts.pi import install as pi_install
    from specialists.store.paths import find_project_root

    if args.user:
        path, show = pi_install.user_settings(), str(pi_install.user_settings())
    else:
        root = Path(find_project_root())
        path = pi_install.project_settings(root)
        show = str(path.relative_to(root))
    act = pi_install.install_pi if args.install_action == "install" else pi_install.uninstall_pi
    for line in act(path, show=show, dry_run=args.dry_run):
        print(line)
    if args.install_action == "install" and not args.user:
        print(PI_TRUST_NOTE)
    return 0


# pi 1.x loads a project's .pi/settings.json only once the project is trusted (verified on
# 1.6.0: in RPC and print mode, which cannot ask, an untrusted project's extensions are
# skipped without a word).
PI_TRUST_NOTE = (
    "note: pi loads a project's .pi/settings.json only in a trusted project: interactive pi "
    "asks once (or /trust); `pi -p` and `pi --mode rpc` need `--approve`. "
    "`specialists install --pi --user` loads it in every project instead"
)
