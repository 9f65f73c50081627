"""`specialists sandboxes [prune | squash ID]`: the project's sandbox branches (R-S7).

- no subcommand: every `sandbox-<id>` branch, merged or not as R-S7 defines it, and its
  worktree.
- `prune`: delete the merged branches, after the person at the terminal confirms (or
  `--yes`). Refused while any worktree has uncommitted changes; a branch that moved after it
  was shown is kept.
- `squash ID`: merge a finished sandbox (a thread id or a sandbox id) into the working copy
  it came from, staged only, never committed (R-S8), after confirmation.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from specialists.base.errors import UserError

if TYPE_CHECKING:
    from specialists.features.sandbox.backend import SandboxBackend, SquashOutcome
    from specialists.project import Project


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sandboxes", help="list sandbox branches; prune merged ones; squash one")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    actions = p.add_subparsers(dest="action")
    prune = actions.add_parser("prune", help="delete merged sandbox branches (asks first)")
    prune.add_argument("--yes", "-y", action="store_true", help="do not ask")
    squash = actions.add_parser("squash", help="stage a finished sandbox's work in your tree")
    squash.add_argument("id", help="thread id (t-...) or sandbox id")
    squash.add_argument("--yes", "-y", action="store_true", help="do not ask")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, project: Project) -> int:
    from specialists.features.threads.sandboxing import backend_for

    backend = backend_for(project.root)
    if backend.detect(project.root) is None:
        raise UserError(f"{project.root} is not in a git repository; it has no sandboxes")
    if args.action == "prune":
        return _prune(backend, yes=args.yes)
    if args.action == "squash":
        return _squash(backend, project, args.id, yes=args.yes)
    return _list(backend, as_json=args.json)


def _list(backend: SandboxBackend, *, as_json: bool) -> int:
    import json

    from specialists.base.display import display_line

    listing = backend.list()
    for problem in listing.problems:
        print(f"warning: {display_line(f'{problem.where}: {problem.what}', 300)}", file=sys.stderr)
    if as_json:
        rows = [
            {
                "id": s.id,
                "branch": s.branch,
                "tip": s.tip,
                "merged": s.merged,
                "note": s.note,
                "worktree": str(s.worktree) if s.worktree else None,
            }
            for s in listing.sandboxes
        ]
        print(json.dumps({"sandboxes": rows}))
        return 0
    if not listing.sandboxes:
        print("no sandboxes")
    for s in listing.sandboxes:
        state = "merged" if s.merged else "unmerged"
        where = f"  {s.worktree}" if s.worktree else ""
        tip = s.tip[:12] if s.tip else "(gone)"
        print(f"{s.branch}  {tip}  {state:<8}  {display_line(s.note, 60)}{where}")
    return 0


def _prune(backend: SandboxBackend, *, yes: bool) -> int:
    plan = backend.prune_plan()
    if plan.blocked:
        raise UserError(plan.describe(), hint="commit or discard those changes, then prune again")
    for kept in plan.kept:
        print(f"keep {kept.branch}: {kept.reason}")
    if not plan.candidates:
        print("nothing to prune")
        return 0
    for c in plan.candidates:
        print(f"delete {c.branch} at {c.tip[:12]} ({c.proof})")
    if not _confirmed(f"delete {len(plan.candidates)} merged branch(es)?", yes):
        print("nothing deleted")
        return 1
    outcome = backend.prune_merged(plan)
    for kept in outcome.kept:
        print(f"kept {kept.branch}: {kept.reason}")
    print(f"deleted {len(outcome.deleted)} branch(es)")
    return 0


def _squash(backend: SandboxBackend, project: Project, ref: str, *, yes: bool) -> int:
    from specialists.features.threads.owning import child_state_for, sandbox_for

    sandbox = sandbox_for(backend, project.store.root, ref)
    state, auto_commit = child_state_for(project.store.root, sandbox.id)
    target = sandbox.origin

    def squash(confirmed: bool) -> SquashOutcome:
        return backend.squash_into(
            target, sandbox, child=state, commit=False, auto_commit=auto_commit, confirmed=confirmed
        )

    first = squash(False)
    if first.kind != "refused" or first.reason != "needs_confirmation":
        return _show_squash(first)
    question = f"stage the work of {sandbox.branch} in {target} (nothing is committed)?"
    if not _confirmed(question, yes):
        print("nothing changed")
        return 1
    return _show_squash(squash(True))


def _show_squash(outcome: SquashOutcome) -> int:
    text = outcome.describe()
    if outcome.kind == "squashed":
        print(text)
        return 0
    raise UserError(text)


def _confirmed(question: str, yes: bool) -> bool:
    """The person's consent: --yes, or an answer at a terminal; never assumed headless."""
    if yes:
        return True
    if sys.stdin is None or not sys.stdin.isatty():
        raise UserError("no terminal to confirm on", hint="pass --yes to confirm")
    answer = input(f"{question} [y/N] ")
    return answer.strip().lower() in ("y", "yes")
