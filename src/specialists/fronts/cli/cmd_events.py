"""How `specialists events [--owner KEY] [--all] [--follow] [--ack] [--json]` prints an
owner's inbox for people (the command is generated from the events op, supervise/look.py):
the one format the model reads; `--follow` keeps printing new events until interrupted;
`--ack` takes what was printed."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

    from specialists.project import Project

FOLLOW_POLL_S = 0.05  # well inside the 100 ms delivery target, and a stat plus a read


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


def _events(data: dict[str, Any], args: argparse.Namespace) -> int:
    shown = _show(data, args)
    if not args.follow:
        if not shown:
            print(f"no {'' if args.all else 'pending '}events for {data['owner']}", file=sys.stderr)
        return 0
    offset = data["end_offset"]
    try:
        while True:
            data = args.again(since=offset)
            _show(data, args)
            if data["end_offset"] == offset and not data["events"]:
                time.sleep(FOLLOW_POLL_S)
            offset = data["end_offset"]
    except KeyboardInterrupt:
        return 0


def _show(data: dict[str, Any], args: argparse.Namespace) -> int:
    import json

    from specialists.base.display import display_line, for_terminal
    from specialists.events.model import event_from_dict
    from specialists.events.render import render_event

    for problem in data["problems"]:
        print(f"warning: {display_line(problem, 500)}", file=sys.stderr)
    for row in data["events"]:
        if args.json:
            print(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
            continue
        event = event_from_dict(row)[0]
        assert event is not None, "bug: an event the inbox read does not read back"
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(event.ts_ms / 1000))
        # Bodies are untrusted (a command's output): control characters shown, not run.
        print(for_terminal(f"# {when}  {event.id}\n{render_event(event)}\n"))
    sys.stdout.flush()
    if args.ack and (data["events"] or data["problems"]):
        args.again(delivered=data)
    return len(data["events"])


def _flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--follow", "-f", action="store_true", help="keep printing new events")
    p.add_argument(
        "--ack", action="store_true", help="mark what is shown as delivered (take the events)"
    )
    p.add_argument("--json", action="store_true", help="one JSON object per event")


TEXT = {"events": _events}
FLAGS = {"events": _flags}
OWN_JSON = ("events",)
