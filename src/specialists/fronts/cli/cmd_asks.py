"""How `specialists asks` and `specialists reply` print for people (the commands are generated
from the ask ops, features/asks/verbs.py, as the agents' list_asks and reply_to_ask are). A
person at the terminal oversees every ask of the project (or one owner's with --owner) and
may answer any open one; agents answer only their own."""

from __future__ import annotations

from typing import Any

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def _asks(asks: Any, args: argparse.Namespace) -> int:
    from specialists.features.asks.render import ask_lines

    if not asks.rows:
        print("no open asks" if not args.all else "no asks")
        return 0
    print("\n\n".join(ask_lines(r, full=True) for r in asks.rows))
    return 0


def _replied(done: Any, args: argparse.Namespace) -> int:
    print(done.describe())
    return 0


TEXT = {"asks": _asks, "reply": _replied}
