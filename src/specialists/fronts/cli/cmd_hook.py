"""`specialists hook <event>`: Claude Code hook entry points (JSON on stdin and stdout).

Installed into .claude/settings.json by `specialists install`. Each hook prints nothing at
all when there is nothing to say, never fails its host (exit 0 always) and logs problems
to $XDG_STATE_HOME/specialists/hooks.log. See docs/hooks.md.
"""

from __future__ import annotations

import argparse
import sys

from specialists.fronts.cli.commands import HOOK_EVENTS

TYPE_CHECKING = False  # `typing` costs ~5 ms on every hook run; annotations are strings
if TYPE_CHECKING:
    from specialists.project import Project


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("hook", help="Claude Code hook entry points (read hook JSON on stdin)")
    events = p.add_subparsers(dest="hook_event", metavar="EVENT", required=True)
    for name, text in HOOK_EVENTS.items():
        events.add_parser(name, help=text).set_defaults(run=run)


def run(args: argparse.Namespace, project: Project) -> int:
    """The hook finds its project from its own input (the session's cwd), not ours."""
    from specialists.fronts.hooks.common import run_hook

    del project
    return run_hook(args.hook_event, sys.stdin, sys.stdout)
