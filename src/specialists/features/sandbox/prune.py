"""Listing sandboxes with merged/unmerged (R-S7), and pruning merged branches safely.

Display follows R-S7 exactly (`rules.merged_state`). Deletion asks for more: a proof that
the branch's work is in HEAD now, either its tip is an ancestor of HEAD beyond its recorded
base (R-S7's rule), or its current tip carries a squash marker *and* merging it into HEAD
would change nothing (`git merge-tree` gives HEAD's own tree). The second proof is ours: a
squash makes a new commit, so a squashed branch is never an ancestor of HEAD and would
otherwise never be prunable; a marker alone proves nothing (the squash may have been reset),
but "HEAD already contains every change of this branch" does.

Pruning is two steps so a person can confirm in between: `plan` inspects and records each
candidate's tip; `execute` deletes a branch only if it still points there, with git's own
compare-and-delete (`git update-ref -d <ref> <old>`), so a branch that moved after it was
inspected, even in the instant before deletion, is kept. Both refuse while any worktree
holds uncommitted changes (a root squash that is only staged is such a change).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from specialists.features.sandbox.backend import (
    Kept,
    Listing,
    PruneCandidate,
    PruneOutcome,
    PrunePlan,
    Sandbox,
    SandboxError,
    SandboxStatus,
)
from specialists.features.sandbox.rules import (
    BRANCH_PREFIX,
    StatusEntry,
    id_of_branch,
    merged_state,
)

if TYPE_CHECKING:
    from specialists.features.sandbox.git import GitSandbox

Proof = Literal["ancestor", "squashed"]


def branch_tips(gs: GitSandbox) -> dict[str, str]:
    out = gs.git(
        gs.project,
        "for-each-ref",
        "--format=%(refname)%00%(objectname)",
        f"refs/heads/{BRANCH_PREFIX}*",
    )
    tips = {}
    for line in out.splitlines():
        ref, _, sha = line.partition(b"\0")
        tips[os.fsdecode(ref).removeprefix("refs/heads/")] = sha.decode()
    return tips


def is_ancestor(gs: GitSandbox, commit: str, of: str) -> bool:
    return gs.run(gs.project, "merge-base", "--is-ancestor", commit, of).code == 0


def applied_in(gs: GitSandbox, head: str, tip: str) -> bool:
    """Merging `tip` into `head` would change nothing: every change of tip is in head."""
    try:
        tree, conflicts = gs.merge_tree(head, tip)
    except SandboxError:
        return False  # not proven: kept
    return not conflicts and tree == gs.rev(gs.project, f"{head}^{{tree}}")


def proof(gs: GitSandbox, sandbox: Sandbox, tip: str) -> Proof | None:
    if tip == sandbox.base_sha:
        return None  # a fresh branch is never merged
    head = gs.rev(gs.project, "HEAD^{commit}")
    if head is None:
        return None
    if is_ancestor(gs, tip, head):
        return "ancestor"
    if any(m.tip == tip for m in sandbox.squashes) and applied_in(gs, head, tip):
        return "squashed"
    return None


def listing(gs: GitSandbox) -> Listing:
    sandboxes, problems = gs.meta.read_all()
    tips = branch_tips(gs)
    trees = {w.branch: Path(w.path) for w in gs.worktrees() if w.branch}
    head = gs.rev(gs.project, "HEAD^{commit}")

    def in_head(tip: str) -> bool:
        return head is not None and is_ancestor(gs, tip, head)

    rows = []
    for sb in sorted(sandboxes, key=lambda s: (s.created_at_ms, s.id)):
        tip = tips.pop(sb.branch, None)
        merged, note = merged_state(tip, sb.base_sha, sb.squashes, in_head)
        if sb.pending is not None:
            note = f"squash interrupted, squash again to finish ({note})"
        rows.append(
            SandboxStatus(
                sb.id, sb.branch, tip, trees.get(f"refs/heads/{sb.branch}"), merged, note, sb
            )
        )
    for branch, tip in sorted(tips.items()):
        merged, note = merged_state(tip, None, (), in_head)
        tree = trees.get(f"refs/heads/{branch}")
        rows.append(
            SandboxStatus(id_of_branch(branch) or "", branch, tip, tree, merged, note, None)
        )
    return Listing(tuple(rows), tuple(problems))


def blocked(gs: GitSandbox) -> tuple[str, ...]:
    """Worktrees holding uncommitted changes (as `pending` counts them)."""
    found = []
    for tree in gs.worktrees():
        if tree.bare or tree.prunable or not os.path.isdir(tree.path):
            continue
        entries = pending(gs, Path(tree.path))
        if entries:
            found.append(f"{tree.path} ({entries[0].path}{' …' if len(entries) > 1 else ''})")
    return tuple(found)


def pending(gs: GitSandbox, top: Path) -> list[StatusEntry]:
    """Staged, unstaged and untracked changes in the working copy `top`, except inside our
    own state directory (`.specialists/`, when nothing ignores it): that is never work."""
    state = gs.root.parent
    top = Path(os.path.realpath(top))
    ours = _inside(state, top) and not _inside(top, state)
    prefix = state.relative_to(top).as_posix() + "/" if ours else None
    return [e for e in gs.changes(top) if not (prefix and e.path.startswith(prefix))]


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def plan(gs: GitSandbox) -> PrunePlan:
    stuck = blocked(gs)
    if stuck:
        return PrunePlan((), (), stuck)
    candidates: list[PruneCandidate] = []
    kept: list[Kept] = []
    for row in listing(gs).sandboxes:
        if row.tip is None:
            continue
        if row.sandbox is None:
            kept.append(Kept(row.branch, "no record of its base: delete by hand if unwanted"))
        elif row.worktree is not None:
            kept.append(Kept(row.branch, f"checked out at {row.worktree}"))
        else:
            found = proof(gs, row.sandbox, row.tip)
            if found is None:
                kept.append(Kept(row.branch, _why_kept(row)))
            else:
                candidates.append(PruneCandidate(row.sandbox.id, row.branch, row.tip, found))
    return PrunePlan(tuple(candidates), tuple(kept))


def execute(gs: GitSandbox, confirmed: PrunePlan) -> PruneOutcome:
    """Delete what `confirmed` lists, each only if nothing about it changed since."""
    stuck = confirmed.blocked or blocked(gs)
    if stuck:
        return PruneOutcome((), confirmed.kept, stuck)
    deleted: list[str] = []
    kept = list(confirmed.kept)
    for cand in confirmed.candidates:
        sandbox = gs.get(cand.id)
        tip = gs.tip(cand.branch)
        reason = None
        if sandbox is None or sandbox.branch != cand.branch:
            reason = "its record is gone"
        elif tip != cand.tip:
            reason = "moved after it was inspected"
        elif gs.worktree_of(cand.branch) is not None:
            reason = "checked out in a worktree now"
        elif proof(gs, sandbox, tip) is None:
            reason = "no longer merged into HEAD"
        elif not delete_branch(gs, cand.branch, cand.tip):
            reason = "moved after it was inspected"
        if reason is None:
            gs.meta.delete(cand.id)
            deleted.append(cand.branch)
        else:
            kept.append(Kept(cand.branch, reason))
    return PruneOutcome(tuple(deleted), tuple(kept))


def delete_branch(gs: GitSandbox, branch: str, expected_tip: str) -> bool:
    """Delete `branch` only if it still points at `expected_tip` (git's compare-and-delete)."""
    return gs.run(gs.project, "update-ref", "-d", f"refs/heads/{branch}", expected_tip).ok


def _why_kept(row: SandboxStatus) -> str:
    if row.merged:
        return f"{row.note}, but its work is not in HEAD now"
    return row.note
