"""`specialists asks [--all] [--owner KEY] [--json]` and `specialists reply <ask-id> <answer>`.

A person at the terminal oversees every ask of the project (or one owner's with --owner) and
may answer any open one; agents use list_asks and reply_to_ask, which answer only their own.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specialists.project import Project


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("asks", help="questions jobs asked their supervisor (contact_supervisor)")
    p.add_argument("--all", action="store_true", help="also answered, timed-out and progress asks")
    p.add_argument("--owner", metavar="KEY", help="only asks addressed to this owner key")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(run=run_asks)
    r = sub.add_parser("reply", help="answer an open ask of a job")
    r.add_argument("ask", help="the ask id (ask-<job>-<n>)")
    r.add_argument("answer", nargs="+", help="the answer")
    r.set_defaults(run=run_reply)


def run_asks(args: argparse.Namespace, project: Project) -> int:
    from specialists.asks.ops import list_asks
    from specialists.asks.render import ask_lines
    from specialists.events.owners import check_owner

    owners = None if args.owner is None else (check_owner(args.owner.strip()),)
    rows, problems = list_asks(project.store.root, owners, include_settled=args.all)
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    if args.json:
        asks = []
        for r in rows:
            out = r.ask.to_dict() | {"state": r.state}
            if r.outcome is not None:
                out["outcome"] = r.outcome.to_dict()
            asks.append(out)
        print(json.dumps({"asks": asks}, ensure_ascii=False))
        return 0
    if not rows:
        print("no open asks" if not args.all else "no asks")
        return 0
    print("\n\n".join(ask_lines(r, full=True) for r in rows))
    return 0


def run_reply(args: argparse.Namespace, project: Project) -> int:
    from specialists.asks.ops import reply
    from specialists.owner import person_key

    done = reply(project.store.root, args.ask, " ".join(args.answer), by=person_key(), owners=None)
    print(done.describe())
    return 0
