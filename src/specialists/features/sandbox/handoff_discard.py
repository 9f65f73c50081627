"""Reviewing and discarding what a handoff left: `specialists worktree show` and `discard`.

`inspect` reads the manifest and looks at each child's paths as they are now (the worktree
there or gone, uncommitted changes, the branch tip), so after an abrupt exit it shows what is
recoverable and how. `discard` is the only deletion of a handoff's work, and only of what the
manifest names *and* this project owns: a worktree registered at its recorded path under our
sandboxes root on its recorded branch, a branch still at the tip that was shown. Everything
else is kept and said so, with the git commands to finish by hand. Patches and the manifest
stay (the record of what was discarded).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from specialists.features.sandbox.backend import SandboxError
from specialists.features.sandbox.git import GitSandbox
from specialists.features.sandbox.handoff import update
from specialists.features.sandbox.handoff_links import unlink_dependencies
from specialists.features.sandbox.handoff_manifest import (
    ChildEntry,
    HandoffError,
    HandoffManifest,
    check_handoff_id,
    manifest_path,
    read_manifest,
)
from specialists.features.sandbox.prune import delete_branch
from specialists.features.sandbox.rules import same_path


@dataclass(frozen=True)
class ChildView:
    entry: ChildEntry
    worktree_exists: bool
    ours: bool  # its worktree path is under this project's sandboxes root, named by its id
    tip: str | None  # the branch tip now; None when the branch is gone
    dirty: tuple[str, ...]  # uncommitted paths in its worktree now

    def recovery(self) -> tuple[str, ...]:
        """How to get at this child's work by hand."""
        e = self.entry
        steps = []
        if self.worktree_exists:
            steps.append(f"git -C {e.worktree} status")
        if self.tip:
            steps.append(f"git log --oneline {e.branch}  # review, then squash:")
            steps.append(f"specialists sandboxes squash {e.sandbox}")
        if e.patch:
            steps.append(f"git apply --3way {e.patch}")
        return tuple(steps)


@dataclass(frozen=True)
class HandoffView:
    manifest: HandoffManifest
    path: Path
    children: tuple[ChildView, ...]


@dataclass(frozen=True)
class DiscardOutcome:
    removed: tuple[str, ...]  # one line per thing removed
    kept: tuple[str, ...]  # one line per thing kept, with why
    manual: tuple[str, ...]  # git commands to finish by hand

    @property
    def complete(self) -> bool:
        return not self.kept


def resolve(project: Path, ref: str) -> Path:
    """A manifest from `ref`: a handoff (workflow) id, or the path of a manifest file."""
    if "/" in ref or ref.endswith(".json"):
        return Path(ref)
    return manifest_path(project, check_handoff_id(ref))


def inspect(project: Path, ref: str) -> HandoffView:
    path = resolve(project, ref)
    manifest = read_manifest(path)
    gs = GitSandbox(project)
    return HandoffView(manifest, path, tuple(_view(gs, c) for c in manifest.children))


def discard(project: Path, view: HandoffView) -> DiscardOutcome:
    """Remove the worktrees and branches `view` showed (the person confirmed that view)."""
    gs = GitSandbox(project)
    removed: list[str] = []
    kept: list[str] = []
    manual: list[str] = []
    done: dict[str, ChildEntry] = {}
    with gs.meta.locked():
        for child in view.children:
            entry = child.entry
            if entry.state == "discarded":
                continue
            if not child.ours:
                kept.append(f"{entry.key}: {entry.worktree} is not one of this project's sandboxes")
                continue
            worktree_gone, why = _remove_worktree(gs, child)
            if worktree_gone:
                removed.append(f"{entry.key}: worktree {entry.worktree}")
            else:
                kept.append(f"{entry.key}: worktree {entry.worktree} kept ({why})")
                manual.append(f"git worktree remove --force {entry.worktree}")
            branch_gone = child.tip is None or delete_branch(gs, entry.branch, child.tip)
            if branch_gone and child.tip is not None:
                removed.append(f"{entry.key}: branch {entry.branch} at {child.tip[:12]}")
            elif not branch_gone:
                kept.append(f"{entry.key}: branch {entry.branch} moved since it was shown")
                manual.append(f"git branch -D {entry.branch}")
            if worktree_gone and branch_gone:
                gs.meta.delete(entry.sandbox)
            done[entry.key] = entry.replace(
                state="discarded" if worktree_gone and branch_gone else entry.state,
                worktree_removed=worktree_gone,
                branch_removed=branch_gone,
            )

    def mark(manifest: HandoffManifest | None) -> HandoffManifest:
        if manifest is None:
            raise HandoffError(f"the manifest {view.path} vanished during the discard")
        for entry in done.values():
            manifest = manifest.with_child(entry)
        return manifest

    if view.path == manifest_path(project, view.manifest.id):
        update(project, view.manifest.id, mark)
    return DiscardOutcome(tuple(removed), tuple(kept), tuple(manual))


def _view(gs: GitSandbox, entry: ChildEntry) -> ChildView:
    worktree = Path(entry.worktree)
    ours = same_path(worktree, gs.root / entry.sandbox)
    exists = worktree.is_dir()
    dirty: tuple[str, ...] = ()
    if exists and ours:
        try:
            dirty = tuple(e.path for e in gs.changes(worktree))
        except SandboxError as exc:
            dirty = (f"(cannot tell: {exc.one_line()})",)
    tip = gs.tip(entry.branch)
    return ChildView(entry, exists, ours, tip, dirty)


def _remove_worktree(gs: GitSandbox, child: ChildView) -> tuple[bool, str]:
    entry = child.entry
    tree = gs.worktree_of(entry.branch)
    if tree is None:
        if os.path.lexists(entry.worktree):
            return False, f"not registered on {entry.branch}: left intact"
        return True, ""
    if not same_path(tree.path, entry.worktree):
        return False, f"{entry.branch} is checked out at {tree.path}"
    unlink_dependencies(Path(entry.worktree), entry.links)
    done = gs.run(gs.project, "worktree", "remove", "--force", "--force", entry.worktree)
    if not done.ok:
        return False, f"git worktree remove failed: {done.err_text(200)}"
    return True, ""
