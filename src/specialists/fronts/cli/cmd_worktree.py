"""`specialists worktree list | show | capture | discard`: the review path of worktree handoffs.

- `list`: every handoff manifest of the project, one line each.
- `show REF`: a manifest (a workflow's handoff id, or a manifest's path) with each child's
  worktree, branch, patch and diff stat as recorded and as they are now, and how to recover
  them by hand. After an abrupt exit this is where the owned paths are.
- `capture REF`: capture every child that ended without it (the process that owned the
  handoff died): patches and stats into the manifest, dirty work preserved.
- `discard REF`: remove the children's worktrees and branches, after the person at the
  terminal confirms what `show` lists (headless: refused without `--yes`).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from specialists.features.sandbox.handoff_discard import ChildView, HandoffView
    from specialists.project import Project


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("worktree", help="review, capture or discard worktree handoffs")
    actions = p.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="the project's handoff manifests")
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    show = actions.add_parser("show", help="a handoff's children, patches and recovery")
    show.add_argument("ref", help="the workflow's job id (handoff id) or a manifest's path")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    capture = actions.add_parser("capture", help="capture children that ended without it")
    capture.add_argument("ref", help="the workflow's job id (handoff id) or a manifest's path")
    discard = actions.add_parser("discard", help="delete a handoff's worktrees and branches")
    discard.add_argument("ref", help="the workflow's job id (handoff id) or a manifest's path")
    discard.add_argument("--yes", "-y", action="store_true", help="do not ask")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, project: Project) -> int:
    if args.action == "list":
        return _list(project, as_json=args.json)
    from specialists.features.sandbox.handoff_discard import inspect

    view = inspect(project.root, args.ref)
    if args.action == "show":
        return _show(view, as_json=args.json)
    if args.action == "capture":
        return _capture(project, view)
    return _discard(project, view, yes=args.yes)


def _list(project: Project, *, as_json: bool) -> int:
    from specialists.base.display import display_line
    from specialists.features.sandbox.handoff_manifest import (
        HandoffError,
        list_manifests,
        read_manifest,
    )

    rows: list[dict[str, Any]] = []
    for path in list_manifests(project.root):
        try:
            m = read_manifest(path)
        except HandoffError as exc:
            print(f"warning: {display_line(exc.one_line(), 300)}", file=sys.stderr)
            continue
        states: dict[str, int] = {}
        for c in m.children:
            states[c.state] = states.get(c.state, 0) + 1
        rows.append({"id": m.id, "owner": m.owner, "path": str(path), "states": states})
    if as_json:
        print(json.dumps({"handoffs": rows}))
        return 0
    if not rows:
        print("no worktree handoffs")
    for row in rows:
        counts = ", ".join(f"{n} {s}" for s, n in sorted(row["states"].items()))
        print(f"{row['id']}  {counts or 'no children'}  {row['path']}")
    return 0


def _show(view: HandoffView, *, as_json: bool) -> int:
    from specialists.base.display import display_line

    m = view.manifest
    if as_json:
        data = m.to_dict()
        children = [
            {**row, **_now(c)} for row, c in zip(data["children"], view.children, strict=True)
        ]
        print(json.dumps({**data, "path": str(view.path), "children": children}))
        return 0
    owner = f", owner {m.owner}" if m.owner else ""
    print(f"handoff {m.id}{owner}: {len(m.children)} children from {m.base_sha[:12]} in {m.origin}")
    for c in view.children:
        e = c.entry
        print(f"- {display_line(e.key, 80)}: {e.state}")
        print(f"    worktree {e.worktree} ({_worktree_now(c)})")
        print(f"    branch {e.branch} ({c.tip[:12] if c.tip else 'gone'})")
        if e.stat:
            print(f"    patch {e.patch}: {display_line(str(e.stat.get('summary')), 120)}")
        if e.problem:
            print(f"    problem: {display_line(e.problem, 300)}")
        for warning in e.warnings:
            print(f"    warning: {display_line(warning, 300)}")
        for step in c.recovery() if e.state != "discarded" else ():
            print(f"    $ {step}")
    return 0


def _capture(project: Project, view: HandoffView) -> int:
    from specialists.base.display import display_line
    from specialists.features.sandbox.handoff import child_ended

    for c in view.children:
        done = child_ended(project.root, view.manifest.id, c.entry.key)
        print(f"{display_line(c.entry.key, 80)}: {done.state}: {display_line(done.summary, 160)}")
        for warning in done.warnings:
            print(f"warning: {display_line(warning, 300)}", file=sys.stderr)
    return 0


def _discard(project: Project, view: HandoffView, *, yes: bool) -> int:
    from specialists.base.display import display_line
    from specialists.features.sandbox.handoff_discard import discard
    from specialists.fronts.cli.cmd_sandboxes import _confirmed as confirmed

    live = [c for c in view.children if c.entry.state != "discarded"]
    if not live:
        print(f"handoff {view.manifest.id}: nothing left to discard")
        return 0
    for c in live:
        dirty = f", {len(c.dirty)} uncommitted path(s)" if c.dirty else ""
        print(
            f"discard {display_line(c.entry.key, 80)}: {c.entry.worktree}{dirty}, {c.entry.branch}"
        )
    question = f"permanently delete {len(live)} worktree(s) and branch(es)? patches stay"
    if not confirmed(question, yes):
        print("nothing discarded")
        return 1
    outcome = discard(project.root, view)
    for line in outcome.removed:
        print(f"removed {display_line(line, 300)}")
    for line in outcome.kept:
        print(f"kept {display_line(line, 300)}")
    if outcome.manual:
        print("to finish by hand:")
        for step in outcome.manual:
            print(f"  $ {step}")
    return 0 if outcome.complete else 1


def _worktree_now(c: ChildView) -> str:
    if not c.worktree_exists:
        return "gone"
    if not c.ours:
        return "not one of this project's sandboxes"
    return f"{len(c.dirty)} uncommitted path(s)" if c.dirty else "clean"


def _now(c: ChildView) -> dict[str, Any]:
    return {
        "now": {
            "worktree_exists": c.worktree_exists,
            "ours": c.ours,
            "tip": c.tip,
            "dirty": list(c.dirty),
            "recovery": list(c.recovery()),
        }
    }
