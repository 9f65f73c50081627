"""How `specialists worktree list | show | capture | discard` prints for people and asks (the
command is generated from the handoff ops, features/sandbox/verbs.py; docs/cli.md)."""

from __future__ import annotations

from typing import Any

from specialists.base.display import display_line
from specialists.fronts.cli.consent import confirmed, yes_flag

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace


def _list(data: dict[str, Any], args: Namespace) -> int:
    if not data["handoffs"]:
        print("no worktree handoffs")
    for row in data["handoffs"]:
        counts = ", ".join(f"{n} {s}" for s, n in sorted(row["states"].items()))
        print(f"{row['id']}  {counts or 'no children'}  {row['path']}")
    return 0


def _show(m: dict[str, Any], args: Namespace) -> int:
    owner = f", owner {m['owner']}" if m["owner"] else ""
    children = m["children"]
    print(
        f"handoff {m['id']}{owner}: {len(children)} children from {m['base_sha'][:12]}"
        f" in {m['origin']}"
    )
    for e in children:
        now = e["now"]
        print(f"- {display_line(e['key'], 80)}: {e['state']}")
        print(f"    worktree {e['worktree']} ({_worktree_now(now)})")
        print(f"    branch {e['branch']} ({now['tip'][:12] if now['tip'] else 'gone'})")
        if e["stat"]:
            print(f"    patch {e['patch']}: {display_line(str(e['stat'].get('summary')), 120)}")
        if e["problem"]:
            print(f"    problem: {display_line(e['problem'], 300)}")
        for warning in e["warnings"]:
            print(f"    warning: {display_line(warning, 300)}")
        for step in now["recovery"] if e["state"] != "discarded" else ():
            print(f"    $ {step}")
    return 0


def _worktree_now(now: dict[str, Any]) -> str:
    if not now["worktree_exists"]:
        return "gone"
    if not now["ours"]:
        return "not one of this project's sandboxes"
    return f"{len(now['dirty'])} uncommitted path(s)" if now["dirty"] else "clean"


def _captured(data: dict[str, Any], args: Namespace) -> int:
    for row in data["captured"]:
        print(
            f"{display_line(row['key'], 80)}: {row['state']}: {display_line(row['summary'], 160)}"
        )
    return 0


def _discard(data: dict[str, Any], args: Namespace) -> int:
    live = data["live"]
    if not live:
        print(f"handoff {data['id']}: nothing left to discard")
        return 0
    for c in live:
        dirty = f", {c['dirty']} uncommitted path(s)" if c["dirty"] else ""
        print(f"discard {display_line(c['key'], 80)}: {c['worktree']}{dirty}, {c['branch']}")
    question = f"permanently delete {len(live)} worktree(s) and branch(es)? patches stay"
    if not confirmed(question, args.yes):
        print("nothing discarded")
        return 1
    outcome = args.again(confirmed={c["key"]: c["tip"] for c in live})
    for line in outcome["removed"]:
        print(f"removed {display_line(line, 300)}")
    for line in outcome["kept"]:
        print(f"kept {display_line(line, 300)}")
    if outcome["manual"]:
        print("to finish by hand:")
        for step in outcome["manual"]:
            print(f"  $ {step}")
    return 0 if outcome["complete"] else 1


TEXT = {"list": _list, "show": _show, "capture": _captured, "discard": _discard}
FLAGS = {"discard": yes_flag}
ASKS = ("discard",)
