"""A person's consent before a command changes what cannot be undone (`sandboxes prune`,
`worktree discard`, `merge land`): `--yes`, or an answer at a terminal; never assumed when
nobody is there to answer."""

from __future__ import annotations

import argparse
import sys

from specialists.base.errors import UserError


def confirmed(question: str, yes: bool) -> bool:
    """The person's consent: --yes, or an answer at a terminal; never assumed headless."""
    if yes:
        return True
    if sys.stdin is None or not sys.stdin.isatty():
        raise UserError("no terminal to confirm on", hint="pass --yes to confirm")
    answer = input(f"{question} [y/N] ")
    return answer.strip().lower() in ("y", "yes")


def yes_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--yes", "-y", action="store_true", help="do not ask")
