"""`specialists timer set|list|cancel`: an owner's durable timers, for people and scripts.

    specialists timer set 90 --note "check CI"            in 90 seconds (prints its id)
    specialists timer set 600 --note "tea" --wait          ... and wait here until it fires
    specialists timer set --date 2026-12-24 --time 09:00 --zone Europe/Berlin
    specialists timer list [--all]                         pending (or every) timer
    specialists timer cancel tm-1a2b3c4d5e6f | --all

The same handlers as the agents' sleep, sleep_until and timer_cancel tools (one set of
rules: 1 to 604,800 seconds, IANA zones with DST gaps and overlaps, at most timers.max
pending, ids never reused); a timer fires into the owner's inbox. A person at a terminal
hears of it from their next `specialists` command (cli/tell.py), or at once with `--wait`;
a Claude Code session from its hooks; `specialists events` shows it to anyone. Bad input is
one line `error: ...` and changes nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING

from specialists.base.display import display_line
from specialists.base.errors import UserError

WAIT_POLL_S = 1.0  # a wait re-reads the timers this often (another process may cancel it)

if TYPE_CHECKING:
    from specialists.events.timers import Timer
    from specialists.native.agent_tools import Caller, Reply
    from specialists.project import Project


def add_parser(sub: argparse._SubParsersAction) -> None:
    from specialists.fronts.cli.cmd_events import add_owner_arg

    p = sub.add_parser("timer", help="set, list or cancel durable timers")
    verbs = p.add_subparsers(dest="verb", metavar="set|list|cancel", required=True)
    s = verbs.add_parser("set", help="set a timer: in SECONDS, or at --date --time --zone")
    s.add_argument("seconds", nargs="?", help="seconds from now (1 to 604800)")
    s.add_argument("--date", help="YYYY-MM-DD (with --time and --zone)")
    s.add_argument("--time", help="HH:MM or HH:MM:SS")
    s.add_argument("--zone", help="IANA time zone, e.g. Europe/Berlin or UTC")
    s.add_argument("--note", default="", help="shown when it fires")
    s.add_argument(
        "--wait", action="store_true", help="stay until it fires, then print it (and ring)"
    )
    ls = verbs.add_parser("list", help="pending timers (fires what is due first)")
    ls.add_argument("--all", action="store_true", help="also fired and cancelled ones")
    c = verbs.add_parser("cancel", help="cancel a pending timer")
    c.add_argument("id", nargs="?", help="timer id (tm-...)")
    c.add_argument("--all", action="store_true", help="every pending timer of the owner")
    for verb in (s, ls, c):
        add_owner_arg(verb)
        verb.add_argument("--json", action="store_true", help="machine-readable output")
        verb.set_defaults(run=run)


def run(args: argparse.Namespace, project: Project) -> int:
    from specialists.fronts.cli.cmd_events import owner_key
    from specialists.native.agent_tools import Caller
    from specialists.native.tool_settings import settings_from_config
    from specialists.supervise.pending import check_owner_dir

    owner = owner_key(args.owner, project)
    check_owner_dir(project.store.root, owner)
    caller = Caller(
        project.store.root,
        owner,
        project.root,
        settings=settings_from_config(_config_raw(project)),
    )
    if args.verb == "set":
        return _set(args, caller)
    if args.verb == "cancel":
        return _cancel(args, caller)
    return _list(args, caller)


def _set(args: argparse.Namespace, caller: Caller) -> int:
    from specialists.base.errors import UserError
    from specialists.features.timers.tools import sleep, sleep_until
    from specialists.native.agent_tools import ToolCall

    wall = (args.date, args.time, args.zone)
    note = {"note": args.note} if args.note else {}
    if args.seconds is not None:
        if any(wall):
            raise UserError("give SECONDS or --date/--time/--zone, not both")
        try:
            seconds = float(args.seconds)
        except ValueError:
            raise UserError(
                f"invalid seconds {args.seconds[:40]!r}", hint="a number from 1 to 604800"
            ) from None
        reply = sleep(ToolCall({"seconds": seconds, **note}, caller, call_id="cli"))
    elif all(wall):
        date, at, zone = wall
        args_ = {"date": date, "time": at, "timezone": zone, **note}
        reply = sleep_until(ToolCall(args_, caller, call_id="cli"))
    else:
        raise UserError(
            "a timer needs SECONDS, or all of --date, --time and --zone",
            hint="e.g. specialists timer set 90, or --date 2026-12-24 --time 09:00 --zone UTC",
        )
    if reply.is_error:  # the handlers raise for bad input; a reply error is still an error
        raise UserError(reply.text.removeprefix("error: "))
    timer_id, due_ms = str(reply.data["timer_id"]), int(reply.data["due_ms"])
    if args.json and not args.wait:
        print(json.dumps({"id": timer_id, "due_ms": due_ms}, separators=(",", ":")))
        return 0
    shown = f": {display_line(args.note, 80)}" if args.note else ""
    if not args.wait:
        print(timer_id)  # the id alone: `t=$(specialists timer set 60)`
        print(f"timer {timer_id} due {_when(due_ms)}{shown}", file=sys.stderr)
        return 0
    print(f"timer {timer_id} due {_when(due_ms)}{shown}; waiting (Ctrl-C leaves it set)",
          file=sys.stderr)  # fmt: skip
    return _wait_for(args, caller, timer_id)


def _wait_for(args: argparse.Namespace, caller: Caller, timer_id: str) -> int:
    """Stay until the timer fires (fired by us or by whoever looked first), print it, and
    take its event so no other front repeats it. Cancelled meanwhile: exit 1."""
    from specialists.events.inbox import Inbox
    from specialists.events.timers import TimerStore
    from specialists.events.wake import WakeWatch

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
        print(json.dumps(_timer_dict(timer), separators=(",", ":")))
        return 0
    bell = "\a" if sys.stdout.isatty() else ""
    note = f": {display_line(timer.note, 300)}" if timer.note else ""
    print(f"{bell}timer {timer_id} fired at {_when(timer.done_at_ms or timer.due_ms)}{note}")
    return 0


def _cancel(args: argparse.Namespace, caller: Caller) -> int:
    from specialists.base.errors import UserError
    from specialists.features.timers.tools import timer_cancel
    from specialists.native.agent_tools import ToolCall

    if args.all == (args.id is not None):
        raise UserError("give a timer id or --all", hint="see: specialists timer list")
    call_args = {"all": True} if args.all else {"id": args.id}
    return _print_reply(args, timer_cancel(ToolCall(call_args, caller, call_id="cli")), "")


def _list(args: argparse.Namespace, caller: Caller) -> int:
    from specialists.events.timers import TimerStore

    store = TimerStore(caller.state_root, caller.owner)
    store.fire_due(int(time.time() * 1000))  # a front that looks fires what is due
    fold = store.fold()
    for problem in fold.problems:
        print(f"warning: {display_line(problem, 500)}")
    timers = list(fold.timers.values()) if args.all else fold.pending()
    timers.sort(key=lambda t: (t.due_ms, t.id))
    if args.json:
        print(json.dumps({"timers": [_timer_dict(t) for t in timers]}, separators=(",", ":")))
        return 0
    if not timers:
        print(f"no {'' if args.all else 'pending '}timers for {caller.owner}")
        return 0
    now_ms = int(time.time() * 1000)
    for t in timers:
        left = f"in {_span(t.due_ms - now_ms)}" if t.state == "pending" else t.state
        note = f"  {display_line(t.note, 80)}" if t.note else ""
        print(f"{t.id}  {_when(t.due_ms)}  {left}{note}")
    return 0


def _print_reply(args: argparse.Namespace, reply: Reply, extra: str) -> int:
    if reply.is_error:  # the handlers raise for bad input; a reply error is still an error
        raise UserError(reply.text.removeprefix("error: "))
    if args.json:
        print(json.dumps(dict(reply.data), separators=(",", ":")))
    else:
        text = reply.text.split(" The wake-up arrives")[0]  # the model's instruction, not ours
        print(f"{text.rstrip('.')} ({extra})." if extra else text)
    return 0


def _timer_dict(t: Timer) -> dict[str, object]:
    return {
        "id": t.id,
        "due_ms": t.due_ms,
        "state": t.state,
        "note": t.note,
        "created_ms": t.created_ms,
        "done_at_ms": t.done_at_ms,
    }


def _when(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(ms / 1000))


def _span(ms: int) -> str:
    from specialists.base.display import duration

    return "now" if ms <= 0 else duration(ms / 1000)


def _config_raw(project: Project) -> dict[str, object]:
    from specialists.catalog.config import load_config

    config = load_config(project.root)
    for warning in config.warnings:  # unknown keys: named, ignored
        print(f"warning: {warning}", file=sys.stderr)
    return dict(config.raw)
