"""The git steps of a merge queue beyond a squash: what a sandbox changed, moving a waiting
sandbox's branch onto the queue's new tip, and the conflicted tree a resolver starts from.

A rebase here replays a sandbox's whole change as one commit on the new tip (the same
three-way merge a squash makes, `git merge-tree --write-tree`, so no working copy is touched
to find out), because the queue squashes it anyway: replaying each of its commits would only
add places to conflict. Moving the branch is a compare-and-swap (`git update-ref <new>
<old>`); a worktree that has it checked out is brought along first (`git read-tree -m -u
<old> <new>`, which refuses to overwrite local changes), so the worktree never looks dirty
to a later squash. The old tip stays in the branch's reflog and in the queue's journal.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from specialists.features.sandbox.backend import Sandbox, SandboxError
from specialists.features.sandbox.prune import delete_branch
from specialists.features.sandbox.rules import parse_numstat

if TYPE_CHECKING:
    from specialists.features.sandbox.git import GitSandbox

log = logging.getLogger("specialists.features.sandbox")
MARKERS = (b"<<<<<<< ", b">>>>>>> ")


def changed_files(gs: GitSandbox, sandbox: Sandbox, tip: str | None = None) -> list[str]:
    """Every path the sandbox's branch changed against its base (both names of a rename)."""
    tip = tip or gs.tip(sandbox.branch)
    if tip is None:
        raise SandboxError(f"branch {sandbox.branch} is gone")
    return sorted(_names(gs, gs.project, "--no-renames", sandbox.base_sha, tip, "--"))


def lines_changed(gs: GitSandbox, sandbox: Sandbox, tip: str) -> int:
    out = gs.git(gs.project, "diff", "--numstat", "-z", "--no-renames", sandbox.base_sha, tip)
    return sum((added or 0) + (deleted or 0) for _, added, deleted in parse_numstat(out))


def _names(gs: GitSandbox, cwd: Path, *args: str) -> set[str]:
    """The paths `git diff --name-only` lists for `args`."""
    out = gs.git(cwd, "diff", "--name-only", "-z", *args)
    return {os.fsdecode(p) for p in out.split(b"\0") if p}


def replay(gs: GitSandbox, tip: str, onto: str, message: str) -> tuple[str | None, tuple[str, ...]]:
    """`tip`'s change (against their merge base) as one commit whose parent is `onto` (not
    applied yet), or None and its conflicts."""
    tree, conflicted = gs.merge_tree(onto, tip)
    if conflicted:
        return None, conflicted
    made = gs.git(gs.project, "commit-tree", "--no-gpg-sign", "-p", onto, "-m", message, tree)
    return made.decode().strip(), ()


def landed_since(gs: GitSandbox, tip: str, onto: str) -> set[str]:
    """The paths `onto` changed since it and `tip` parted (their merge base)."""
    base = gs.run(gs.project, "merge-base", tip, onto)
    if not base.ok:
        raise SandboxError(f"{tip[:12]} and {onto[:12]} share no history")
    fork = base.stdout.decode().strip()
    return _names(gs, gs.project, "--no-renames", fork, onto, "--")


def move_branch(gs: GitSandbox, sandbox: Sandbox, old: str, new: str, base: str) -> Sandbox:
    """Point the sandbox's branch at `new` (from `old`), bringing its worktree along, and
    record `base` as what it now starts from. Safe to repeat after a crash at any step."""
    ref = f"refs/heads/{sandbox.branch}"
    with gs.meta.locked():
        now = gs.tip(sandbox.branch)
        if now not in (old, new):
            raise SandboxError(f"{sandbox.branch} moved meanwhile (to {str(now)[:12]}); kept")
        tree = gs.worktree_of(sandbox.branch)
        if tree is not None and not tree.prunable and os.path.isdir(tree.path):
            _bring_worktree(gs, tree.path, old, new)
        if now == old:
            moved = gs.run(
                gs.project, "update-ref", "-m", "specialists: merge queue", ref, new, old
            )
            if not moved.ok:
                raise SandboxError(f"cannot move {sandbox.branch}: {moved.err_text()}")
        current = gs.get(sandbox.id) or sandbox
        updated = current._replace(base_sha=base)
        if updated != current:
            gs.meta.write(updated)
        return updated


def _bring_worktree(gs: GitSandbox, path: str, old: str, new: str) -> None:
    """The worktree's index and files from `old` to `new`, unless they are there already."""
    top = Path(path)
    if gs.index_is(top, new):
        return
    if not gs.index_is(top, old):
        raise SandboxError(f"the worktree {path} has staged changes; it was left as it is")
    done = gs.run(top, "read-tree", "-m", "-u", old, new)
    if not done.ok:
        raise SandboxError(f"cannot update the worktree {path}: {done.err_text()}")


def reset_to_head(gs: GitSandbox, sandbox: Sandbox) -> None:
    """Drop what a killed squash staged in a sandbox nobody else writes in (the queue's own):
    index and files back to its HEAD; untracked files stay."""
    if not gs.index_is(sandbox.path, "HEAD"):
        gs.git(sandbox.path, "reset", "--quiet", "--hard", "HEAD")


def start_conflict(gs: GitSandbox, worktree: Sandbox, tip: str) -> tuple[str, ...]:
    """Merge `tip` into the fresh sandbox `worktree` without committing, leaving git's
    conflict markers where it cannot merge: what a resolver edits. Returns the conflicted
    paths (none: it merged cleanly after all)."""
    done = gs.run(worktree.path, "merge", "--squash", "--no-commit", tip)
    if done.code not in (0, 1):
        raise SandboxError(f"git merge in {worktree.path} failed: {done.err_text()}")
    return tuple(sorted(_names(gs, worktree.path, "--diff-filter=U")))


def markers_left(gs: GitSandbox, commit: str, paths: tuple[str, ...]) -> tuple[str, ...]:
    """The paths whose content at `commit` still holds a conflict marker line."""
    left = []
    for path in paths:
        shown = gs.run(gs.project, "cat-file", "blob", f"{commit}:{path}")
        if shown.ok and any(line.startswith(MARKERS) for line in shown.stdout.splitlines()):
            left.append(path)
    return tuple(left)


def retire(gs: GitSandbox, sandbox: Sandbox, tip: str) -> None:
    """The resolver's sandbox once its commit is the member's branch: its worktree removed
    (kept, with a log line, if it holds anything), its branch deleted only while it still
    points at `tip`, its record with it."""
    refused = gs.remove_worktree(sandbox)
    if refused is not None:
        log.warning("resolver sandbox %s kept: %s", sandbox.id, refused.message)
        return
    with gs.meta.locked():
        if delete_branch(gs, sandbox.branch, tip):
            gs.meta.delete(sandbox.id)
