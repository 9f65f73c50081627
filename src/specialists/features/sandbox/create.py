"""Creating a sandbox (R-S1, R-S2) without ever deleting what this call did not create (R-S7).

Order matters: the id is checked before git runs; the repository and the base commit are
resolved before anything is written; the destination, the branch and the record must all be
absent (checked under the room's lock) before `git worktree add`. The worktree starts at the
base *commit* resolved here, so a parent branch that moves meanwhile cannot change what the
record says the sandbox started from.

If `git worktree add` fails, this call has established no ownership of the destination or
the branch (another process may have made either in the meantime), so both are left as they
are and the error names them. Only a failure after git succeeded (the record cannot be
written) is rolled back, and only for the worktree registered at our path on our branch.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from specialists.features.sandbox import prune as prune_mod
from specialists.features.sandbox.backend import Repo, Sandbox, SandboxError
from specialists.features.sandbox.rules import branch_name, check_id, exclude_pattern, same_path

if TYPE_CHECKING:
    from specialists.features.sandbox.git import GitSandbox

NOTHING_CHANGED = "nothing was created or changed"
EXCLUDE_COMMENT = b"# specialists sandboxes (R-S2)\n"


def create(
    gs: GitSandbox,
    id: str,
    *,
    base: Sandbox | None,
    origin: Path | None,
    start: str | None = None,
) -> Sandbox:
    """`start`: a commit to start from instead of the origin's HEAD (a remote job's
    snapshot of the working tree, executors/workspace.py)."""
    check_id(id)
    project_repo = gs.repo(gs.project)
    if base is not None:
        # The parent's committed branch tip: uncommitted work in its worktree is not included.
        sha = gs.rev(gs.project, f"refs/heads/{base.branch}^{{commit}}")
        label, origin_path = base.branch, base.path
    else:
        origin_repo = gs.repo(origin or gs.project)
        if origin_repo.common_dir != project_repo.common_dir:
            raise SandboxError(f"{origin} is not a working copy of {gs.project}")
        sha = gs.rev(origin_repo.toplevel, f"{start or 'HEAD'}^{{commit}}")
        label, origin_path = ("HEAD" if start is None else start), origin_repo.toplevel
    if sha is None:
        raise SandboxError(
            f"no commit to start sandbox {id} from ({label} does not name one)",
            hint="commit something first" if base is None else "the parent branch is gone",
        )
    branch = branch_name(id)
    dest = gs.root / id
    with gs.meta.locked():
        taken = _taken(gs, id, branch, dest)
        if taken:
            raise SandboxError(f"cannot create sandbox {id}: {taken}", hint=NOTHING_CHANGED)
        ensure_excluded(gs.root, project_repo)
        added = gs.run(gs.project, "worktree", "add", "--quiet", "-b", branch, str(dest), sha)
        if not added.ok:
            raise SandboxError(
                f"git worktree add failed: {added.err_text()}", hint=_leftovers(gs, id)
            )
        sandbox = Sandbox(
            id=id,
            path=dest,
            branch=branch,
            base=label,
            base_sha=sha,
            origin=origin_path,
            parent=base.id if base is not None else None,
            created_at_ms=gs.clock(),
        )
        try:
            gs.meta.write(sandbox)
        except OSError as exc:
            _undo(gs, sandbox)
            raise SandboxError(f"cannot record sandbox {id}: {exc}", hint=NOTHING_CHANGED) from exc
    return sandbox


def ensure_excluded(root: Path, repo: Repo) -> None:
    """R-S2: the sandbox root in `.git/info/exclude`, appended once, never rewritten (the
    file is the user's; a rewrite could drop a line they add meanwhile)."""
    try:
        relative = Path(os.path.realpath(root)).relative_to(repo.toplevel)
    except ValueError:
        return  # the root is outside the working copy: nothing to hide
    line = exclude_pattern(relative.as_posix()).encode()
    info = repo.common_dir / "info"
    info.mkdir(exist_ok=True)
    flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(info / "exclude", flags, 0o644)
    except OSError as exc:
        raise SandboxError(f"cannot open {info / 'exclude'}: {exc.strerror}") from exc
    with os.fdopen(fd, "r+b") as f:
        existing = f.read()
        if line in existing.splitlines():
            return
        prefix = b"\n" if existing and not existing.endswith(b"\n") else b""
        f.write(prefix + EXCLUDE_COMMENT + line + b"\n")


def _taken(gs: GitSandbox, id: str, branch: str, dest: Path) -> str | None:
    if os.path.lexists(dest):
        return f"{dest} already exists"
    if gs.tip(branch) is not None:
        return f"branch {branch} already exists"
    if os.path.lexists(gs.meta.file(id)):
        return f"{gs.meta.file(id)} already exists"
    return None


def _leftovers(gs: GitSandbox, id: str) -> str:
    """What a failed `worktree add` left. Not ours to delete (R-S7): say so."""
    there = [str(gs.root / id)] if os.path.lexists(gs.root / id) else []
    if gs.tip(branch_name(id)) is not None:
        there.append(f"branch {branch_name(id)}")
    if not there:
        return NOTHING_CHANGED
    return "left untouched, they may be another process's: " + ", ".join(there)


def _undo(gs: GitSandbox, sandbox: Sandbox) -> None:
    """Roll back the worktree this call created, and nothing else, after a later failure."""
    tree = gs.worktree_of(sandbox.branch)
    if tree is not None and same_path(tree.path, sandbox.path):
        gs.run(gs.project, "worktree", "remove", "--force", str(sandbox.path))
    prune_mod.delete_branch(gs, sandbox.branch, sandbox.base_sha)
