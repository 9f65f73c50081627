"""How `specialists sandboxes [prune | squash ID]` prints for people, asking the person's
consent first (consent.py). The command is generated from the sandbox ops,
features/sandbox/verbs.py (R-S7, R-S8; docs/cli.md)."""

from __future__ import annotations

from typing import Any

from specialists.fronts.cli.consent import confirmed, yes_flag

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def _list(data: dict[str, Any], args: argparse.Namespace) -> int:
    from specialists.base.display import display_line

    if not data["sandboxes"]:
        print("no sandboxes")
    for s in data["sandboxes"]:
        state = "merged" if s["merged"] else "unmerged"
        where = f"  {s['worktree']}" if s["worktree"] else ""
        tip = s["tip"][:12] if s["tip"] else "(gone)"
        print(f"{s['branch']}  {tip}  {state:<8}  {display_line(s['note'], 60)}{where}")
    return 0


def _prune(plan: dict[str, Any], args: argparse.Namespace) -> int:
    for kept in plan["kept"]:
        print(f"keep {kept['branch']}: {kept['reason']}")
    if not plan["candidates"]:
        print("nothing to prune")
        return 0
    for c in plan["candidates"]:
        print(f"delete {c['branch']} at {c['tip'][:12]} ({c['proof']})")
    if not confirmed(f"delete {len(plan['candidates'])} merged branch(es)?", args.yes):
        print("nothing deleted")
        return 1
    outcome = args.again(confirmed=plan["candidates"])
    for kept in plan["kept"] + outcome["kept"]:
        print(f"kept {kept['branch']}: {kept['reason']}")
    print(f"deleted {len(outcome['deleted'])} branch(es)")
    return 0


def _squash(data: dict[str, Any], args: argparse.Namespace) -> int:
    if not data["squashed"]:
        if not confirmed(data["question"], args.yes):
            print("nothing changed")
            return 1
        data = args.again(confirmed=True)
    print(data["said"])
    return 0


TEXT = {"sandboxes": _list, "prune": _prune, "squash": _squash}
FLAGS = {"prune": yes_flag, "squash": yes_flag}
ASKS = ("prune", "squash")
