"""`squash_into` for git: every refusal of R-S5..R-S7, in the order a caller can act on.

The seed names `git merge --squash`; this computes the same three-way result without touching
any working copy (`git merge-tree --write-tree`, ort, rename detection as merge uses), and only
when it is clean applies it to the target with `git read-tree -m -u HEAD <tree>`. So a
conflict leaves the target exactly as it was, with no rollback that could reset unrelated
work created concurrently (R-S6), and git's own check refuses to overwrite local changes
made after our checks. Ignored files are the one thing read-tree would overwrite silently,
so every path the squash adds is checked first (R-S5).

A commit into a sandboxed parent is `git commit-tree` + `git update-ref HEAD <new> <old>`:
it commits exactly the squashed tree (not whatever else got staged meanwhile), runs no hooks,
and fails rather than overwrite a HEAD that moved; then the result is reported as staged.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, assert_never

from specialists.features.sandbox.backend import (
    ChildState,
    PendingSquash,
    Sandbox,
    SandboxError,
    SquashConflict,
    Squashed,
    SquashMarker,
    SquashMode,
    SquashOutcome,
    SquashRefused,
)
from specialists.features.sandbox.cmd import FALLBACK
from specialists.features.sandbox.rules import is_id, same_path
from specialists.store.paths import STATE_DIR_NAME

if TYPE_CHECKING:
    from specialists.features.sandbox.git import GitSandbox

WAIT_HINT = "wait for its child_closed event, then squash"


def squash(
    gs: GitSandbox,
    target: Path,
    sandbox: Sandbox,
    *,
    child: ChildState,
    commit: bool,
    auto_commit: bool,
    confirmed: bool,
) -> SquashOutcome:
    refused = refuse_child(child, sandbox.id)
    if refused is not None:
        return refused
    where = _target(gs, target, sandbox)
    if isinstance(where, SquashRefused):
        return where
    top, into_sandbox = where
    record = gs.get(sandbox.id) or sandbox
    if record.pending is not None:
        resumed = _resume(gs, top, record, record.pending)
        if resumed is not None:
            return resumed
        record = record._replace(pending=None)  # it never touched the target
        gs.meta.write(record)
    tip = gs.tip(sandbox.branch)
    if tip is None:
        return SquashRefused("no_branch", f"branch {sandbox.branch} is gone", "nothing to squash")

    auto = None
    if _has_worktree(gs, sandbox):
        dirty = tuple(e.path for e in gs.changes(sandbox.path))
        if dirty and not auto_commit:
            return SquashRefused(
                "dirty_sandbox",
                f"sandbox {sandbox.id} has uncommitted changes and auto-commit is off",
                "commit them in the sandbox first: the squash removes its worktree",
                dirty,
            )
        if dirty:
            auto = gs.commit_all(sandbox).sha
            tip = auto or tip

    in_target = tuple(e.path for e in gs.changes(top) if e.code != "??")
    if in_target:
        return SquashRefused(
            "dirty_target",
            f"{top} has uncommitted changes",
            "commit or stash them first, so the squash does not mix with unrelated work",
            in_target,
        )
    head = gs.rev(top, "HEAD^{commit}")
    head_tree = gs.rev(top, "HEAD^{tree}")
    if head is None or head_tree is None:
        return SquashRefused("wrong_target", f"{top} has no commit to squash onto")

    tree, conflicts = gs.merge_tree(head, tip)
    if conflicts:
        return SquashConflict(sandbox.branch, top, conflicts)

    changed = _changed(gs, head_tree, tree)
    # Our state directory is never work: a child that committed into it (`git add -f`)
    # would otherwise write the project's config, job or sandbox records on the squash.
    state = tuple(p for _, p in changed if p.split("/", 1)[0] == STATE_DIR_NAME)
    if state:
        return SquashRefused(
            "writes_state",
            f"{sandbox.branch} changes files in {STATE_DIR_NAME}/, specialists' own state",
            f"remove them from {sandbox.branch} (git rm --cached, commit), then squash again; "
            "nothing was changed",
            state,
        )
    in_the_way = tuple(p for status, p in changed if status == "A" and _occupied(top, p))
    if in_the_way:
        return SquashRefused(
            "would_overwrite",
            f"untracked or ignored files in {top} would be overwritten by the squash",
            "move them away first; nothing was changed",
            in_the_way,
        )
    files = tuple(p for _, p in changed)
    if not into_sandbox and not confirmed and files:
        return SquashRefused(
            "needs_confirmation",
            f"squashing {sandbox.branch} stages {len(files)} files in the root working copy {top}",
            "ask the user to confirm, then squash again with confirm",
            files,
        )
    if not files:
        return _conclude(gs, record, tip, top, "nothing", None, files, auto, [])

    # Journaled before anything is written into the target: a crash from here on leaves a
    # record a retry can tell its own leftovers by, and finish (`_resume`).
    pending = PendingSquash(tip, str(top), head, tree, into_sandbox and commit, gs.clock())
    record = record._replace(pending=pending)
    gs.meta.write(record)
    applied = gs.run(top, "read-tree", "-m", "-u", head, tree)
    if not applied.ok:
        gs.meta.write(record._replace(pending=None))
        return _apply_failed(top, applied.err_text())
    return _applied(gs, record, pending, top, files, auto, [])


def _applied(
    gs: GitSandbox,
    record: Sandbox,
    pending: PendingSquash,
    top: Path,
    files: tuple[str, ...],
    auto: str | None,
    warnings: list[str],
) -> Squashed:
    """The merged tree is in the target's index and files: commit it if asked, then end."""
    if not pending.commit:
        return _conclude(gs, record, pending.tip, top, "staged", None, files, auto, warnings)
    made, fallback = _commit(gs, top, pending.head, pending.tree, f"thread {record.id}")
    if made is None:
        warnings.append(f"HEAD of {top} moved during the squash; the result is staged")
        return _conclude(gs, record, pending.tip, top, "staged", None, files, auto, warnings)
    if fallback:
        warnings.append(f"committed as {FALLBACK}: git has no user.name/user.email there")
    return _conclude(gs, record, pending.tip, top, "committed", made, files, auto, warnings)


def _conclude(
    gs: GitSandbox,
    record: Sandbox,
    tip: str,
    top: Path,
    mode: SquashMode,
    made: str | None,
    files: tuple[str, ...],
    auto: str | None,
    warnings: list[str],
    *,
    marked: bool = False,
) -> Squashed:
    """The marker, then the worktree goes, then the journal is cleared. The marker is
    written before the worktree goes, so a crash in between leaves a squashed sandbox with
    its worktree (and its journal, which a retry finishes), never a removed one without
    its marker."""
    if not marked:
        marker = SquashMarker(tip, str(top), gs.clock(), mode == "committed", made)
        record = record._replace(squashes=(*record.squashes, marker))
        gs.meta.write(record)
    removed = gs.remove_worktree(record)
    if removed is None:
        record = record._replace(removed_at_ms=record.removed_at_ms or gs.clock())
    else:
        warnings.append(f"worktree kept: {removed.message}")
    if removed is None or record.pending is not None:
        gs.meta.write(record._replace(pending=None))
    return Squashed(
        sandbox=record.id,
        branch=record.branch,
        tip=tip,
        target=top,
        mode=mode,
        commit=made,
        files=files,
        worktree_removed=removed is None,
        auto_commit=auto,
        warnings=tuple(warnings),
    )


def _resume(
    gs: GitSandbox, top: Path, record: Sandbox, pending: PendingSquash
) -> SquashOutcome | None:
    """A squash of this sandbox was interrupted (a crash, kill -9): finish it when the
    target holds exactly its leftovers; None when it never touched the target (squash
    afresh); a refusal when the target changed since, so nothing of ours is guessed at."""
    if not os.path.isdir(pending.target):  # its target went (a parent sandbox removed)
        return None
    if not same_path(pending.target, top):
        return SquashRefused(
            "interrupted",
            f"a squash of {record.branch} into {pending.target} was interrupted",
            f"squash it into {pending.target} again to finish it",
        )
    note = [f"finished a squash of {record.branch} that was interrupted"]
    head_tree = gs.rev(top, f"{pending.head}^{{tree}}")
    files = tuple(p for _, p in _changed(gs, head_tree, pending.tree)) if head_tree else ()
    done = [m for m in record.squashes if m.tip == pending.tip and m.at_ms >= pending.at_ms]
    if done:  # only the worktree's removal was left
        mode: SquashMode = "committed" if done[-1].committed else "staged"
        return _conclude(
            gs, record, pending.tip, top, mode, done[-1].commit, files, None, note, marked=True
        )
    head = gs.rev(top, "HEAD^{commit}")
    if head == pending.head and gs.index_is(top, pending.tree):
        return _applied(gs, record, pending, top, files, None, note)
    if head == pending.head and gs.index_is(top, pending.head):
        return None
    if (
        head is not None
        and gs.rev(top, "HEAD^1") == pending.head
        and gs.rev(top, "HEAD^{tree}") == pending.tree
    ):  # committed (by us, or by the person who took the staged result); no marker yet
        mode = "committed" if pending.commit else "staged"
        made = head if pending.commit else None
        return _conclude(gs, record, pending.tip, top, mode, made, files, None, note)
    return SquashRefused(
        "interrupted",
        f"a squash of {record.branch} into {top} was interrupted, and {top} has changed "
        "since (HEAD or the index)",
        "nothing was changed; see `git status` there: once its index matches HEAD again, "
        "squash again",
    )


def refuse_child(child: ChildState, sandbox_id: str) -> SquashRefused | None:
    """R-S5: only a child whose close (commit, diff stat) has completed may be squashed."""
    if child == "running":
        return SquashRefused("child_running", f"thread {sandbox_id} is still running", WAIT_HINT)
    if child == "finalizing":
        return SquashRefused(
            "child_finalizing",
            f"thread {sandbox_id} is still finalizing its sandbox (commit, diff stat)",
            WAIT_HINT,
        )
    if child == "finished":
        return None
    assert_never(child)


def _target(gs: GitSandbox, target: Path, sandbox: Sandbox) -> tuple[Path, bool] | SquashRefused:
    """The target's working-copy top and whether it is a sandbox; or why it is refused."""
    repo = gs.detect(target) if target.is_dir() else None
    ours = gs.detect(gs.project)
    if repo is None or ours is None or repo.common_dir != ours.common_dir:
        return SquashRefused("wrong_target", f"{target} is not a working copy of {gs.project}")
    top = repo.toplevel
    if same_path(top, sandbox.path):
        return SquashRefused("wrong_target", f"cannot squash sandbox {sandbox.id} into itself")
    if same_path(top.parent, gs.root):
        parent = gs.get(top.name) if is_id(top.name) else None
        tree = gs.worktree_of(parent.branch) if parent is not None else None
        if parent is None or tree is None or not same_path(tree.path, top):
            return SquashRefused("wrong_target", f"{top} is not a recorded sandbox")
        return top, True
    if not same_path(top, sandbox.origin):
        return SquashRefused(
            "wrong_target",
            f"{sandbox.branch} was created from {sandbox.origin}, not {top}",
            "squash into the working copy it was created from",
        )
    return top, False


def _has_worktree(gs: GitSandbox, sandbox: Sandbox) -> bool:
    tree = gs.worktree_of(sandbox.branch)
    return (
        tree is not None
        and not tree.prunable
        and same_path(tree.path, sandbox.path)
        and sandbox.path.is_dir()
    )


def _changed(gs: GitSandbox, old_tree: str, new_tree: str) -> list[tuple[str, str]]:
    """(status letter, path) for every path that differs between two trees."""
    out = gs.git(
        gs.project, "diff-tree", "-r", "-z", "--name-status", "--no-renames", old_tree, new_tree
    )
    parts = out.split(b"\0")
    return [
        (parts[i].decode("ascii", "replace"), os.fsdecode(parts[i + 1]))
        for i in range(0, len(parts) - 1, 2)
        if parts[i]
    ]


def _occupied(top: Path, relative: str) -> bool:
    """Something not tracked stands where the squash will write `relative`: the path itself,
    or a non-directory (a file, a symlink) where one of its parent directories must go.
    Tracked paths cannot be here: the squash only adds paths HEAD does not have, and the
    target is clean."""
    path = top
    for part in Path(relative).parts[:-1]:
        path = path / part
        if os.path.islink(path) or (os.path.lexists(path) and not path.is_dir()):
            return True
    return os.path.lexists(top / relative)


def _commit(
    gs: GitSandbox, top: Path, head: str, tree: str, message: str
) -> tuple[str | None, bool]:
    """Commit `tree` on `head` and move HEAD there unless it moved: (the commit or None,
    whether the fallback identity signed it)."""
    fallback = gs.identity(top)
    sha = gs.git(top, "commit-tree", "--no-gpg-sign", "-p", head, "-m", message, tree, env=fallback)
    made = sha.decode().strip()
    moved = gs.run(top, "update-ref", "-m", f"specialists: {message}", "HEAD", made, head)
    return (made if moved.ok else None), bool(fallback)


def _apply_failed(top: Path, err: str) -> SquashRefused:
    # read-tree checks every path before it writes any, so a refusal leaves the target as it
    # was; anything else (a full disk mid-write) may not have.
    if "would be overwritten" in err or "not uptodate" in err:
        return SquashRefused(
            "would_overwrite",
            f"the target changed while squashing: {err}",
            "nothing was changed; try again once it is clean",
        )
    raise SandboxError(
        f"git read-tree failed in {top}: {err}",
        hint="the branch is kept; check `git status` there, manual recovery may be required",
    )
