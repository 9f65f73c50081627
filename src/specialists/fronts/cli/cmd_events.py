"""`specialists events [--owner KEY] [--all] [--follow] [--ack] [--json]`: an owner's inbox.

Shows the events waiting for an owner (a job `job-<id>`, a session `claude-<id>`, ...) in
the one format the model reads, after firing the owner's due timers (a front that looks at
an owner fires what is due, even when the owner's own process is gone). Looking does not
take: the owner's own front still delivers what is shown, unless `--ack` says the events
were delivered here. `--follow` keeps printing new events as they arrive until interrupted.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specialists.events.inbox import Batch, Inbox
    from specialists.project import Project

FOLLOW_POLL_S = 0.05  # well inside the 100 ms delivery target, and a stat plus a read


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("events", help="show (or follow) the events waiting for an owner")
    add_owner_arg(p)
    p.add_argument("--all", action="store_true", help="also the events already delivered")
    p.add_argument("--follow", "-f", action="store_true", help="keep printing new events")
    p.add_argument(
        "--ack", action="store_true", help="mark what is shown as delivered (take the events)"
    )
    p.add_argument("--json", action="store_true", help="one JSON object per event")
    p.set_defaults(run=run)


def add_owner_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--owner",
        metavar="KEY",
        help="whose inbox: job-<id>, claude-<session>, ... (default: this session, else "
        "cli-<user>)",
    )


def owner_key(given: str | None, project: Project) -> str:
    """The owner to act for: the one given, this session's key, or the person's own."""
    import getpass

    from specialists.events.owners import check_owner, session_owner

    if given is not None:
        return check_owner(given.strip())
    keys = project.owner.keys
    if keys:
        return keys[0]
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid: still one owner per machine user
        user = "user"
    return session_owner("cli", user)


def run(args: argparse.Namespace, project: Project) -> int:
    from specialists.events.inbox import Inbox
    from specialists.events.owners import check_owner_dir
    from specialists.events.wake import WakeWatch

    owner = owner_key(args.owner, project)
    root = project.store.root
    check_owner_dir(root, owner)
    watch = WakeWatch(root, owner)
    inbox = Inbox(root, owner)
    watch.look(int(time.time() * 1000))
    batch = inbox.since(0) if args.all else inbox.pending()
    shown = _show(batch, inbox, args)
    if not args.follow:
        if not shown:
            print(f"no {'' if args.all else 'pending '}events for {owner}", file=sys.stderr)
        return 0
    offset = batch.end_offset
    try:
        while True:
            watch.look(int(time.time() * 1000))
            batch = inbox.since(offset)
            _show(batch, inbox, args)
            if batch.end_offset == offset and not batch.events:
                time.sleep(FOLLOW_POLL_S)
            offset = batch.end_offset
    except KeyboardInterrupt:
        return 0


def _show(batch: Batch, inbox: Inbox, args: argparse.Namespace) -> int:
    import json

    from specialists.base.display import display_line, for_terminal
    from specialists.events.render import render_event

    for problem in batch.problems:
        print(f"warning: {display_line(problem, 500)}", file=sys.stderr)
    for event in batch.events:
        if args.json:
            print(json.dumps(event.to_dict(), ensure_ascii=False, separators=(",", ":")))
        else:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(event.ts_ms / 1000))
            # Bodies are untrusted (a command's output): control characters shown, not run.
            print(for_terminal(f"# {when}  {event.id}\n{render_event(event)}\n"))
    sys.stdout.flush()
    if args.ack and (batch.events or batch.problems):
        inbox.ack(batch)
    return len(batch.events)
