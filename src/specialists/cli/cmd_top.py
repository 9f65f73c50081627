"""`specialists top`: the live terminal dashboard (needs the `tui` extra: Textual)."""

from __future__ import annotations

import argparse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from specialists.project import Project

INSTALL_HINT = "install it with: pip install 'specialists[tui]'"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "top",
        help="live terminal dashboard: jobs, feed, stop/steer/follow-up keys",
        description=(
            "Jobs as a tree with status, current tool, elapsed, tokens, cost and attention "
            "flags, and the selected job's feed. Keys: s stop, t steer, f follow up, "
            "i interrupt (keep-alive jobs), o or Enter result, a active only, q quit. "
            "Needs the optional Textual package (pip install 'specialists[tui]')."
        ),
    )
    p.add_argument("--active", action="store_true", help="show only jobs with work in progress")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, project: Project) -> int:
    import sys
    from pathlib import Path

    from specialists.errors import AgentUnavailable, UserError

    try:
        from specialists.tui.app import TopApp
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in ("textual", "rich"):
            raise
        # A missing dependency, as a missing agent CLI is: exit 3, not bad input.
        raise AgentUnavailable("top needs the optional Textual package", hint=INSTALL_HINT) from exc
    for name, stream in (("stdout", sys.stdout), ("stdin", sys.stdin)):
        if stream is None or not stream.isatty():
            raise UserError(
                f"top needs a terminal: {name} is not a TTY",
                hint="for a one-shot view use `specialists status`; in a browser `specialists web`",
            )
    from specialists.fleet.model import job_fleet

    root = project.root
    store = project.store
    label = str(root).replace(str(Path.home()), "~", 1)
    TopApp(store, job_fleet(store), root_label=label, active_only=args.active).run()
    return 0
