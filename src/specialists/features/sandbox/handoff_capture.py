"""Capturing an ended worktree child's work: its patch and diff stat, or its preservation.

The capture takes everything the child left, not only what it committed: the worktree is
snapshotted into a throwaway index (a copy of its own, so unchanged files are not re-read),
`git add -A` (ignored files stay out, and so does a nested `.specialists/`), `git write-tree`,
and the patch is `git diff --binary <base> <that tree>`. The child's branch, index and files
are untouched. If that fails (git fails, the patch passes its cap), uncommitted work is
committed to the child's branch with hooks disabled, and else left in place; either way with
a warning, and nothing is deleted.
"""

from __future__ import annotations

import os
from pathlib import Path

from specialists.base.errors import StoreError
from specialists.features.sandbox.backend import SandboxError
from specialists.features.sandbox.cmd import OUTPUT_CAP
from specialists.features.sandbox.git import GitSandbox, git_env
from specialists.features.sandbox.handoff_links import unlink_dependencies
from specialists.features.sandbox.handoff_manifest import ChildEntry, HandoffManifest, patch_dir
from specialists.features.sandbox.rules import parse_numstat
from specialists.features.sandbox.worktree_tree import TreeFailed, worktree_tree
from specialists.store.atomic import write_atomic
from specialists.store.files import ensure_dir

MAX_PATCH_BYTES = 64 * 1024 * 1024
_DIFF = ("diff", "--no-ext-diff", "--no-textconv", "--no-renames")


class CaptureFailed(Exception):
    """The patch could not be captured; the message says why."""


def capture(
    gs: GitSandbox, manifest: HandoffManifest, entry: ChildEntry, now_ms: int
) -> ChildEntry:
    worktree = Path(entry.worktree)
    warnings = list(entry.warnings) + unlink_dependencies(worktree, entry.links)
    tip = gs.tip(entry.branch)
    try:
        tree = _snapshot(gs, manifest, entry)
        patch, stat = _patch(gs, manifest.base_sha, tree)
        path = patch_dir(gs.project, manifest.id) / f"{entry.sandbox}.patch"
        ensure_dir(path.parent)
        write_atomic(path, patch, durable=True)
    except (CaptureFailed, SandboxError, StoreError, OSError) as exc:
        why = exc.one_line() if isinstance(exc, SandboxError | StoreError) else str(exc)
        return _preserve(gs, entry, tip, why, warnings, now_ms)
    committed_tree = gs.rev(gs.project, f"{tip}^{{tree}}") if tip else None
    if committed_tree != tree:
        warnings.append(f"uncommitted work in {worktree} is in the patch, not on {entry.branch}")
    return entry.replace(
        state="captured", patch=str(path), stat=stat, tip=tip,
        warnings=tuple(warnings), ended_at_ms=now_ms,
    )  # fmt: skip


def _snapshot(gs: GitSandbox, manifest: HandoffManifest, entry: ChildEntry) -> str:
    worktree = Path(entry.worktree)
    if not worktree.is_dir():
        raise CaptureFailed(f"its worktree {worktree} is gone")
    folder = patch_dir(gs.project, manifest.id)
    ensure_dir(folder.parent)
    ensure_dir(folder)
    scratch = folder / f".index-{entry.sandbox}-{os.getpid()}"
    try:
        return worktree_tree(worktree, scratch, env=git_env(), timeout_s=gs.timeout_s)
    except TreeFailed as exc:
        raise CaptureFailed(str(exc)) from exc


def _patch(gs: GitSandbox, base: str, tree: str) -> tuple[bytes, dict[str, object]]:
    patch = gs.git(gs.project, *_DIFF, "--binary", base, tree)
    if len(patch) >= min(MAX_PATCH_BYTES, OUTPUT_CAP):
        raise CaptureFailed(f"the patch is larger than {MAX_PATCH_BYTES >> 20} MiB")
    rows = parse_numstat(gs.git(gs.project, *_DIFF, "--numstat", "-z", base, tree))
    text = gs.git(gs.project, *_DIFF, "--stat=120", base, tree).decode(errors="replace")
    insertions = sum(r[1] or 0 for r in rows)
    deletions = sum(r[2] or 0 for r in rows)
    n = len(rows)
    summary = (
        f"{n} file{'s' if n != 1 else ''} changed, +{insertions} -{deletions}"
        if rows
        else "no changes"
    )
    stat = {
        "files": [r[0] for r in rows],
        "insertions": insertions,
        "deletions": deletions,
        "summary": summary,
        "text": text.rstrip()[-8000:],
    }
    return patch, stat


def _preserve(
    gs: GitSandbox,
    entry: ChildEntry,
    tip: str | None,
    why: str,
    warnings: list[str],
    now_ms: int,
) -> ChildEntry:
    """No patch: make sure the work survives anyway, and say where it is."""
    sandbox = gs.get(entry.sandbox)
    preserved = f"on {entry.branch} at {tip[:12]}" if tip else "in place"
    if sandbox is not None and Path(entry.worktree).is_dir():
        try:
            if gs.has_pending_work(Path(entry.worktree)):
                made = gs.commit_all(sandbox, f"handoff: preserved work of {entry.key[:60]}")
                preserved = f"committed {made.sha} on {entry.branch}"
                tip = made.sha
        except SandboxError as exc:
            preserved = f"in place at {entry.worktree} (not committed: {exc.one_line()})"
    warnings.append(f"no patch captured ({why}); the work is preserved {preserved}")
    return entry.replace(
        state="preserved", problem=why, preserved=preserved, tip=tip,
        warnings=tuple(warnings), ended_at_ms=now_ms,
    )  # fmt: skip
