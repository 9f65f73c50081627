"""How `specialists timer set|list|cancel` prints for people (the command is generated from the
timer ops, features/timers/verbs.py, as the agents' sleep and timer_cancel are).

    specialists timer set 90 --note "check CI"            in 90 seconds (prints its id)
    specialists timer set 600 --note "tea" --wait          ... and wait here until it fires
    specialists timer set --date 2026-12-24 --time 09:00 --zone Europe/Berlin
    specialists timer list [--all]                         pending (or every) timer
    specialists timer cancel tm-1a2b3c4d5e6f | --all

A person at a terminal hears of a timer from their next `specialists` command (cli/tell.py),
or at once with `--wait`; a Claude Code session from its hooks; `specialists events` shows it
to anyone.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from specialists.base.display import display_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

WAIT_POLL_S = 1.0  # a wait re-reads the timers this often (another process may cancel it)


def _wait_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--wait", action="store_true", help="stay until it fires, then print it (and ring)"
    )


def _set(data: dict[str, Any], args: argparse.Namespace) -> int:
    timer_id, due_ms = data["id"], data["due_ms"]
    if args.json and not args.wait:
        print(json.dumps({"id": timer_id, "due_ms": due_ms}, separators=(",", ":")))
        return 0
    shown = f": {display_line(data['note'], 80)}" if data["note"] else ""
    if not args.wait:
        print(timer_id)  # the id alone: `t=$(specialists timer set 60)`
        print(f"timer {timer_id} due {_when(due_ms)}{shown}", file=sys.stderr)
        return 0
    print(f"timer {timer_id} due {_when(due_ms)}{shown}; waiting (Ctrl-C leaves it set)",
          file=sys.stderr)  # fmt: skip
    return _wait_for(args, timer_id)


def _wait_for(args: argparse.Namespace, timer_id: str) -> int:
    """Stay until the timer fires (fired by us or by whoever looked first), print it, and
    take its event so no other front repeats it. Cancelled meanwhile: exit 1."""
    from specialists.events.inbox import Inbox
    from specialists.events.timers import TimerStore
    from specialists.events.wake import WakeWatch
    from specialists.features.timers.verbs import timer_dict
    from specialists.fronts.cli.generated import person
    from specialists.project import Project

    caller = person(Project(), args.owner)
    watch = WakeWatch(caller.state_root, caller.owner)
    store = TimerStore(caller.state_root, caller.owner)
    try:
        while True:
            watch.look(int(time.time() * 1000))
            timer = store.fold().timers.get(timer_id)
            if timer is None or timer.state != "pending":
                break
            time.sleep(min(max(0.01, timer.due_ms / 1000 - time.time()), WAIT_POLL_S))
    except KeyboardInterrupt:
        print(
            f"\ntimer {timer_id} stays set; cancel it: specialists timer cancel {timer_id}",
            file=sys.stderr,
        )
        return 130
    if timer is None or timer.state != "fired":
        state = "gone" if timer is None else timer.state
        print(f"error: timer {timer_id} was {state} before it fired", file=sys.stderr)
        return 1
    Inbox(caller.state_root, caller.owner).drop([f"{timer_id}:timer:1"])  # told here
    if args.json:
        print(json.dumps(timer_dict(timer), separators=(",", ":")))
        return 0
    bell = "\a" if sys.stdout.isatty() else ""
    note = f": {display_line(timer.note, 300)}" if timer.note else ""
    print(f"{bell}timer {timer_id} fired at {_when(timer.done_at_ms or timer.due_ms)}{note}")
    return 0


def _list(data: dict[str, Any], args: argparse.Namespace) -> int:
    timers = data["timers"]
    if not timers:
        print(f"no {'' if args.all else 'pending '}timers for {data['owner']}")
        return 0
    now_ms = int(time.time() * 1000)
    for t in timers:
        left = f"in {_span(t['due_ms'] - now_ms)}" if t["state"] == "pending" else t["state"]
        note = f"  {display_line(t['note'], 80)}" if t["note"] else ""
        print(f"{t['id']}  {_when(t['due_ms'])}  {left}{note}")
    return 0


def _cancel(data: dict[str, Any], args: argparse.Namespace) -> int:
    from specialists.features.timers.verbs import said_cancel

    print(said_cancel(data))
    return 0


def _when(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(ms / 1000))


def _span(ms: int) -> str:
    from specialists.base.display import duration

    return "now" if ms <= 0 else duration(ms / 1000)


TEXT = {"set": _set, "list": _list, "cancel": _cancel}
FLAGS = {"set": _wait_flag}
OWN_JSON = {"set"}
