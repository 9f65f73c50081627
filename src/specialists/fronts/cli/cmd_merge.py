"""How `specialists merge ...` prints for people, asks and waits (`--wait`); the command
is generated from the merge ops, features/sandbox/merge_verbs.py (docs/cli.md, sandbox.md)."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from specialists.fronts.cli.consent import confirmed, yes_flag
from specialists.fronts.cli.values import Duration

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

WAIT_SLICE_S = 0.5


def _started(queue: dict[str, Any], args: argparse.Namespace) -> int:
    print(json.dumps({"id": queue["id"]}) if args.json else queue["id"])
    return _follow(queue, args)


def _ran(queue: dict[str, Any], args: argparse.Namespace) -> int:
    if args.json and not args.wait:
        print(json.dumps(queue))
        return _code(queue)
    return _follow(queue, args)


def _follow(queue: dict[str, Any], args: argparse.Namespace) -> int:
    """Print where the queue stands (stderr); with --wait, pass again as resolvers end."""
    from specialists.features.sandbox.merge_verbs import describe_queue

    deadline = time.monotonic() + args.timeout.ms / 1000 if args.timeout else None
    while args.wait and queue["state"] == "waiting":
        if deadline is not None and time.monotonic() > deadline:
            print(f"{queue['summary']} (stopped waiting; it goes on)", file=sys.stderr)
            return 124
        time.sleep(WAIT_SLICE_S)
        queue = args.again("run", queue_id=queue["id"])
    print(describe_queue(queue), file=sys.stderr)
    return _code(queue)


def _code(queue: dict[str, Any]) -> int:
    """0 when every member landed (or the queue waits on resolvers), 1 otherwise."""
    if queue["state"] == "waiting":
        return 0
    return 0 if all(m["state"] == "landed" for m in queue["members"]) else 1


def _show(data: dict[str, Any], args: argparse.Namespace) -> int:
    from specialists.features.sandbox.merge_verbs import describe_queue

    print(describe_queue(data))
    for entry in data["history"][-50:]:
        what = {k: v for k, v in entry.items() if k not in ("ts", "event")}
        print(f"  {entry.get('event')}: {json.dumps(what)[:200]}")
    return 0


def _land(data: dict[str, Any], args: argparse.Namespace) -> int:
    if "question" in data:
        if not confirmed(data["question"], args.yes):
            print("nothing changed")
            return 1
        data = args.again(confirm=True)
    print(data["said"])
    return 0


def _cancelled(queue: dict[str, Any], args: argparse.Namespace) -> int:
    print(queue["summary"])
    return 0


def _wait_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--wait", action="store_true", help="follow it while resolvers work")
    p.add_argument("--timeout", type=Duration, help="with --wait: give up waiting after D")


TEXT = {"start": _started, "run": _ran, "show": _show, "land": _land, "cancel": _cancelled}
CODE = {"run": _code}
OWN_JSON = ("start", "run")
FLAGS = {"start": _wait_flags, "run": _wait_flags, "land": yes_flag}
ASKS = ("land",)
